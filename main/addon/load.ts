// Finds and loads the one vramlab.node (Node-API: the same file serves Node and Electron).
import { createRequire } from 'node:module';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../paths';
import type { NativeAddon } from './types';

let cached: NativeAddon | undefined;

export function addonCandidates(): string[] {
  const root = projectRoot();
  const list = [
    process.env.VRAMLAB_ADDON,
    path.join(root, 'build', 'Release', 'vramlab.node'),
    path.join(root, 'build', 'Debug', 'vramlab.node'),
  ];
  // Packaged app: electron-builder unpacks the addon next to app.asar.
  const resources = (process as { resourcesPath?: string }).resourcesPath;
  if (resources) list.push(path.join(resources, 'app.asar.unpacked', 'build', 'Release', 'vramlab.node'));
  return list.filter((p): p is string => !!p);
}

export function loadAddon(): NativeAddon {
  if (cached) return cached;
  const found = addonCandidates().find((p) => existsSync(p));
  if (!found) {
    throw new Error(`vramlab's native addon is not built (looked in: ${addonCandidates().join(', ')}). Run \`npm run build:native\`.`);
  }
  const req = createRequire(path.join(projectRoot(), 'package.json'));
  cached = req(found) as NativeAddon;
  return cached;
}

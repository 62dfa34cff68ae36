// Finds and loads the one vramlab.node (Node-API: the same file serves Node and Electron).
import { createRequire } from 'node:module';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../paths';
import type { NativeAddon, NativeJob, NativeRunHandle } from './types';
import { unpackingHandle, type RawRunHandle } from './packed';
import { CATEGORIES } from '../contract/runs';
import { ALLOCATOR_CONSTANTS } from '../contract/allocator';

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
  const addon = req(found) as NativeAddon;
  checkAgreement(addon, found);
  cached = withUnpackedRuns(addon);
  return cached;
}

/** The lists both sides index by position or size by rule must be the same lists: memory
 *  categories (samples carry bytes per category index) and the allocator's size classes. */
export function checkAgreement(addon: Pick<NativeAddon, 'memoryCategories' | 'allocatorConstants'>, file = 'the addon'): void {
  const rebuild = `; rebuild it (npm run build:native) or fix the TypeScript side`;
  const cats = addon.memoryCategories;
  if (!Array.isArray(cats) || cats.length !== CATEGORIES.length || cats.some((c, i) => c !== CATEGORIES[i]))
    throw new Error(`${file} has memory categories [${String(cats)}], main/contract/runs.ts has [${CATEGORIES.join(',')}]${rebuild}`);
  const consts = addon.allocatorConstants ?? {};
  for (const [k, v] of Object.entries(ALLOCATOR_CONSTANTS))
    if (consts[k] !== v)
      throw new Error(`${file} has allocator constant ${k} = ${consts[k]}, main/contract/allocator.ts has ${v}${rebuild}`);
}

/** startRun's handle drains packed columns (packed.ts); callers get objects from drain().
 *  An addon built before drainPacked hands out objects itself and is used as it is. */
function withUnpackedRuns(addon: NativeAddon): NativeAddon {
  const start = addon.startRun.bind(addon);
  const categories = CATEGORIES.length;
  const startRun = (job: NativeJob, onWake: () => void): NativeRunHandle => {
    const raw = start(job, onWake) as NativeRunHandle | RawRunHandle;
    return 'drainPacked' in raw ? unpackingHandle(raw, categories) : raw;
  };
  return { ...addon, startRun };
}

// Where things live: the project root (source checkout, bundle in dist/, or packaged app)
// and the user's data folder.
import { existsSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

function here(): string {
  if (typeof __dirname !== 'undefined') return __dirname;
  return path.dirname(fileURLToPath(import.meta.url));
}

let root: string | undefined;

/** The folder holding vramlab's package.json, found by walking up from this file. */
export function projectRoot(): string {
  if (root) return root;
  let dir = here();
  for (;;) {
    const pkg = path.join(dir, 'package.json');
    if (existsSync(pkg)) {
      try {
        if (JSON.parse(readFileSync(pkg, 'utf8')).name === 'vramlab') return (root = dir);
      } catch {
        /* not ours; keep walking */
      }
    }
    const up = path.dirname(dir);
    if (up === dir) return (root = process.cwd());
    dir = up;
  }
}

/** The run store and settings for the CLI and serve mode; Electron passes userData instead. */
export function defaultHome(): string {
  return process.env.VRAMLAB_HOME || path.join(os.homedir(), '.vramlab');
}

export function rendererDist(): string {
  return path.join(projectRoot(), 'dist', 'renderer');
}

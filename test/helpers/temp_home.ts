// A run store of its own for one test file: VRAMLAB_HOME points into a fresh temporary
// folder while the file's tests run (CLI commands keep their runs there) and is put back,
// the folder removed, after them. `home.dir` is the folder, for spec files and outputs.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll } from 'vitest';

export function useTempHome(prefix: string): { readonly dir: string } {
  const home = { dir: '' };
  let saved: string | undefined;
  beforeAll(() => {
    home.dir = mkdtempSync(path.join(os.tmpdir(), prefix));
    saved = process.env.VRAMLAB_HOME;
    process.env.VRAMLAB_HOME = path.join(home.dir, 'home');
  });
  afterAll(() => {
    if (saved === undefined) delete process.env.VRAMLAB_HOME;
    else process.env.VRAMLAB_HOME = saved;
    rmSync(home.dir, { recursive: true, force: true });
  });
  return home;
}

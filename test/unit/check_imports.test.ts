// The import-boundary check (scripts/check-imports.mjs, part of `npm run typecheck`): the tree
// passes it, and an upward import fails it with the rule that was broken.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { check, layerOf } from '../../scripts/check-imports.mjs';

const root = path.resolve(import.meta.dirname, '../..');
function sources(dir: string, out: { path: string; text: string }[] = []) {
  for (const name of readdirSync(path.join(root, dir))) {
    const rel = path.join(dir, name);
    if (statSync(path.join(root, rel)).isDirectory()) sources(rel, out);
    else if (/\.(ts|svelte)$/.test(name)) out.push({ path: rel, text: readFileSync(path.join(root, rel), 'utf8') });
  }
  return out;
}

describe('import boundaries', () => {
  it('holds for the whole tree', () => {
    expect(check([...sources('main'), ...sources('renderer/src')])).toEqual([]);
  });

  it.each([
    ['main/runner/diagnose.ts', "import { formatBytes } from '../cli/format';", 'runner must not import cli'],
    ['main/export/timeline_csv.ts', "import { annotate } from '../runner/phases';", 'export must not import runner'],
    ['main/contract/spec.ts', "import type { RunStore } from '../store/store';", 'contract must not import store'],
    ['main/store/store.ts', "export { x } from '../host/create';", 'store must not import host'],
    ['main/addon/load.ts', "const m = await import('../runner/fit');", 'addon must not import runner'],
    ['renderer/src/lib/api.ts', "import { RunStore } from '../../../main/store/store';", 'renderer must not import store'],
    ['renderer/src/App.svelte', '<script lang="ts">import x from \'../../main/paths\';</script>', 'renderer must not import paths'],
  ])('fails on an upward import in %s', (file, text, rule) => {
    const problems = check([{ path: file, text }]);
    expect(problems).toHaveLength(1);
    expect(problems[0]).toContain(rule);
  });

  it('allows the layers below and packages', () => {
    expect(
      check([{ path: 'main/cli/commands/fit.ts', text: "import { runFit } from '../../runner/fit';\nimport { z } from 'zod';" }]),
    ).toEqual([]);
    expect(
      check([{ path: 'renderer/src/lib/x.ts', text: "import { parseSpec } from '$contract/spec';\nimport { y } from './y';" }]),
    ).toEqual([]);
    expect(layerOf('main/host/host.ts')).toBe('host-core');
    expect(layerOf('main/host/create.ts')).toBe('host');
  });
});

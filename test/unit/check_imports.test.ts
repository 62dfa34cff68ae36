// The import-boundary check (scripts/check-imports.mjs, part of `npm run typecheck`): the tree
// passes it; an upward import in any form, an import circle, a folder no rule lists and a
// native include of a room above fail it with the rule that was broken.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { check, checkNative, layerOf, treeSources } from '../../scripts/check-imports.mjs';

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
  it('holds for the whole tree, native/ included', () => {
    expect(check([...sources('main'), ...sources('renderer/src')])).toEqual([]);
    const tree = treeSources(root);
    expect(tree.native.length).toBeGreaterThan(100);
    expect(checkNative(tree.native)).toEqual([]);
  });

  it.each([
    ['main/runner/diagnose.ts', "import { formatBytes } from '../cli/format';", 'runner must not import cli'],
    ['main/export/timeline_csv.ts', "import { annotate } from '../runner/phases';", 'export must not import runner'],
    ['main/contract/spec.ts', "import type { RunStore } from '../store/store';", 'contract must not import store'],
    ['main/store/store.ts', "export { x } from '../host/create';", 'store must not import host'],
    ['main/addon/load.ts', "const m = await import('../runner/fit');", 'addon must not import runner'],
    ['main/addon/load.ts', "const { runFit } = require('../runner/fit');", 'addon must not import runner'],
    ['main/addon/load.ts', "import fit = require('../runner/fit');", 'addon must not import runner'],
    ['main/export/csv.ts', "import type { RunStore } from '../store/store';", 'export must not import store'],
    ['main/export/csv.ts', "export type { RunStore } from '../store/store';", 'export must not import store'],
    ['main/export/csv.ts', "let s: import('../store/store').RunStore;", 'export must not import store'],
    ['main/contract/spec.ts', "import '../store/store';", 'contract must not import store'],
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

  it('reads past comments and strings that only mention an import', () => {
    const text = "// import { x } from '../cli/format';\nconst s = \"require('../cli/format')\";\n/* import('../cli/x') */";
    expect(check([{ path: 'main/runner/x.ts', text }])).toEqual([]);
  });

  it('names a folder no rule lists instead of failing on it', () => {
    const problems = check([
      { path: 'main/telemetry/send.ts', text: "import { x } from '../contract/spec';" },
      { path: 'main/runner/x.ts', text: "import { send } from '../telemetry/send';" },
    ]);
    expect(problems).toHaveLength(2);
    expect(problems[0]).toContain('main/telemetry/ is not a layer');
    expect(problems[1]).toContain('main/runner/x.ts: imports "../telemetry/send" from main/telemetry/ is not a layer');
  });

  it('fails on an import circle, type-only imports included', () => {
    const problems = check([
      { path: 'main/contract/a.ts', text: "import type { B } from './b';\nexport type A = number;" },
      { path: 'main/contract/b.ts', text: "import { c } from './c';\nexport type B = string;" },
      { path: 'main/contract/c.ts', text: "import type { A } from './a';\nexport const c = 1;" },
      { path: 'main/contract/d.ts', text: "import type { A } from './a';" },
    ]);
    expect(problems).toEqual([
      expect.stringContaining('import circle: main/contract/a.ts -> main/contract/b.ts -> main/contract/c.ts -> main/contract/a.ts'),
    ]);
  });

  it('finds a circle through the renderer alias and a Svelte component', () => {
    const problems = check([
      { path: 'renderer/src/lib/x.ts', text: "import View from '../panels/View.svelte';" },
      { path: 'renderer/src/panels/View.svelte', text: '<script lang="ts">\n  import { y } from \'../lib/x\';\n</script>' },
      { path: 'main/contract/index.ts', text: "export * from './units';" },
      { path: 'main/contract/units.ts', text: "import { z } from '$contract';" },
    ]);
    expect(problems).toHaveLength(2);
    expect(problems).toContainEqual(expect.stringContaining('main/contract/index.ts -> main/contract/units.ts -> main/contract/index.ts'));
    expect(problems).toContainEqual(
      expect.stringContaining('renderer/src/lib/x.ts -> renderer/src/panels/View.svelte -> renderer/src/lib/x.ts'),
    );
  });

  it.each([
    ['native/allocator/caching_allocator.cpp', '#include "engine/core/tensor.h"', 'native/allocator must not include engine'],
    ['native/device/sim_device.cpp', '#include "allocator/constants.h"', 'native/device must not include allocator'],
    ['native/engine/experiment/experiment.cpp', '#include "runner/job.h"', 'native/engine must not include runner'],
    ['native/engine/core/x.h', '#  include "addon/js_value.h"', 'native/engine must not include addon'],
    ['native/runner/worker.cpp', '#include "addon/bindings.h"', 'native/runner must not include addon'],
  ])('fails on a native include of a room above in %s', (file, text, rule) => {
    const problems = checkNative([{ path: file, text }]);
    expect(problems).toHaveLength(1);
    expect(problems[0]).toContain(rule);
  });

  it('allows native includes downward, within a room and of system headers, and names an unlisted room', () => {
    const text =
      '#include "engine/core/tensor.h"\n#include "allocator/stats.h"\n#include "device/device.h"\n#include <vector>\n#include "napi.h"';
    expect(checkNative([{ path: 'native/addon/engine_binding.cpp', text }])).toEqual([]);
    expect(checkNative([{ path: 'native/runner/x.cpp', text }])).toEqual([]);
    expect(checkNative([{ path: 'native/plugins/x.cpp', text }])[0]).toContain('native/plugins/ is not a room');
  });
});

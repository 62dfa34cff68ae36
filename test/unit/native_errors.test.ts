// The native addon never takes the process down: every bad call from JS becomes a JS error.
// Each call runs in a child process, so an abort would show as a crash, not kill the suite.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { describe, expect, it } from 'vitest';
import { addonCandidates } from '../../main/addon/load';
import { parseSpec } from '../../main/contract/spec';

const addon = addonCandidates().find((p) => existsSync(p))!;

const CALLS: Record<string, string> = {
  'Allocator on an unknown device': `new a.Allocator('gpu:7')`,
  'Allocator with a bad settings key': `new a.Allocator('sim:h100-80gb', 'max_split_size_mbb:128')`,
  'Allocator with a bad settings value': `new a.Allocator('sim:h100-80gb', 'garbage_collection_threshold:2')`,
  'malloc of a negative size': `new a.Allocator('sim:t4-16gb').malloc(-1)`,
  'malloc of a string': `new a.Allocator('sim:t4-16gb').malloc('lots')`,
  'malloc beyond the device': `new a.Allocator('sim:t4-16gb').malloc(2 ** 50)`,
  'free of an unknown address': `new a.Allocator('sim:t4-16gb').free(12345)`,
  'replay with mismatched columns': `a.replayAllocator(new Uint8Array(3), new Float64Array(1), new Uint32Array(3), new Uint32Array(3), {})`,
  'replay with a free of an unknown id': `a.replayAllocator(new Uint8Array([1]), new Float64Array([0]), new Uint32Array([9]), new Uint32Array([0]), {})`,
  'replay with plain arrays': `a.replayAllocator([0], [1], [0], [0], {})`,
  'replay with no arguments': `a.replayAllocator()`,
  'runExperiment with an unknown model': `a.runExperiment({ ...spec, model: { kind: 'transformer' } })`,
  'runExperiment with an unknown precision word': `a.runExperiment({ ...spec, precision: 'fp8' })`,
  'runExperiment on an unknown device': `a.runExperiment({ ...spec, device: 'sim:nope' })`,
  'runExperiment with a field missing': `{ const { weights, ...rest } = spec; a.runExperiment(rest); }`,
  'runExperiment with no object': `a.runExperiment(42)`,
  'startRun with a spec missing its model': `a.startRun({ kind: 'experiment', spec: { ...spec, model: undefined } }, () => {})`,
  'session command on a missing tensor': `new a.Session({ device: 'sim:t4-16gb' }).clone('nope')`,
  'session view of an impossible shape': `{ const s = new a.Session({ device: 'sim:t4-16gb' }); s.randn('x', [10, 10]); s.view('y', 'x', [7, 3]); }`,
  'startRun with a bogus job': `a.startRun({ kind: 'nonsense' }, () => {}, () => {})`,
};

describe('native errors become JS errors', () => {
  it.each(Object.entries(CALLS))('%s', (_name, call) => {
    const script = `const a = require(process.argv[1]); const spec = ${JSON.stringify(parseSpec({ batch: 4 }))};
      try { ${call}; process.stdout.write('no error'); process.exit(0); }
      catch (e) { process.stdout.write(e instanceof Error ? 'Error: ' + e.message : 'non-error thrown'); process.exit(1); }`;
    const child = spawnSync(process.execPath, ['-e', script, addon], { encoding: 'utf8', cwd: tmpdir(), timeout: 20_000 });
    expect(child.signal, child.stderr).toBeNull();
    expect(child.status, child.stdout + child.stderr).toBe(1);
    expect(child.stdout).toMatch(/^Error: \S/);
  });
});

// Readings in words: the engine's keys get labels people read, and the two counts (cudaMalloc
// and cudaFree calls) are shown as counts wherever a run is printed, never as bytes.
import { describe, expect, it } from 'vitest';
import { useTempHome } from '../helpers/temp_home';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { runCli } from '../helpers/io';
import { formatReading, isCountReading, readingLabel } from '../../main/contract/readings';

const home = useTempHome('vramlab-readings-');

describe('readings in words', () => {
  it('labels the protocol keys, iterations counted from 1', () => {
    expect(readingLabel('it0_peak_fwd_bwd')).toBe('peak in forward + backward (iteration 1)');
    expect(readingLabel('it1_after_zero_grad')).toBe('after zero_grad (iteration 2)');
    expect(readingLabel('reserved_peak')).toBe('peak reserved');
    expect(readingLabel('some_new_key')).toBe('some new key');
    expect(isCountReading('num_device_alloc')).toBe(true);
    expect(isCountReading('params')).toBe(false);
    expect(formatReading('num_device_free', 133)).toBe('133 calls');
    expect(formatReading('params', 133)).toBe('133 B');
  });

  it('`vramlab run` prints cudaMalloc calls as a count', async () => {
    const spec = {
      model: { kind: 'gpt', vocab: 512, seq: 128, dim: 128, depth: 2, heads: 2 },
      batch: 2,
      shapes: { seq: { min: 16, max: 128 }, steps: 4 },
    };
    const file = path.join(home.dir, 'spec.json');
    writeFileSync(file, JSON.stringify(spec));
    const { code, out } = await runCli(['run', file]);
    expect(code).toBe(0);
    expect(out).toMatch(/num_device_alloc\s+[0-9]+\s+[0-9,]+ calls/);
    expect(out).not.toMatch(/num_device_alloc\s+[0-9]+\s+[0-9.]+ B\b/);
  });
});

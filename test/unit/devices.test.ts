import { describe, expect, it } from 'vitest';
import { main } from '../../main/cli/main';
import { captureIO } from '../helpers/io';
import { native } from '../helpers/addon';

describe('device listing', () => {
  it('lists every simulated preset with its capacity', () => {
    const list = native.listDevices();
    const ids = list.map((d) => d.id);
    for (const id of ['sim:h100-80gb', 'sim:a100-40gb', 'sim:a100-80gb', 'sim:l4-24gb', 'sim:rtx4090-24gb', 'sim:t4-16gb'])
      expect(ids).toContain(id);
    for (const d of list) {
      expect(d.total).toBeGreaterThan(10 * 2 ** 30);
      expect(d.free).toBeLessThanOrEqual(d.total);
      expect(d.name.length).toBeGreaterThan(0);
    }
    // The H200 preset reports what cudaMemGetInfo says on the real card (PyTorch's "139.80 GiB").
    expect((list.find((d) => d.id === 'sim:h200-141gb')!.total / 2 ** 30).toFixed(2)).toBe('139.80');
  });

  it('`vramlab devices` prints a table and exits 0 without a GPU', async () => {
    const io = captureIO();
    expect(await main(['devices'], io)).toBe(0);
    expect(io.stdout()).toMatch(/sim:h100-80gb\s+NVIDIA H100 80GB \(simulated\)\s+79\.18 GiB/);
    if (!native.listDevices().some((d) => d.kind === 'cuda')) expect(io.stdout()).toContain('No CUDA GPU found');
  });

  it('`vramlab devices --json` is machine-readable', async () => {
    const io = captureIO();
    expect(await main(['devices', '--json'], io)).toBe(0);
    const parsed = JSON.parse(io.stdout());
    expect(parsed).toEqual(native.listDevices());
  });

  it('rejects unknown options with usage exit code 2', async () => {
    const io = captureIO();
    expect(await main(['devices', '--bogus'], io)).toBe(2);
    expect(io.stderr()).toContain("Unknown option '--bogus'");
  });
});

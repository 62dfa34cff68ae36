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

  it('has the cards people rent or own, at their published totals, each context marked measured or estimated', () => {
    const list = native.listDevices();
    const gib = (id: string) => (list.find((d) => d.id === id)!.total / 2 ** 30).toFixed(2);
    // cudaMemGetInfo's total as PyTorch's OOM message prints it on each card (docs/parity.md).
    const published: Record<string, string> = {
      'sim:rtx3090-24gb': '23.70',
      'sim:a10g-24gb': '22.20',
      'sim:a6000-48gb': '47.54',
      'sim:l40s-48gb': '44.40',
      'sim:v100-16gb': '15.78',
      'sim:v100-32gb': '31.74',
    };
    for (const [id, total] of Object.entries(published)) expect(gib(id)).toBe(total);
    for (const d of list.filter((x) => x.kind === 'sim')) {
      // Only the H100 and H200 contexts were measured (bench/torch/context_overhead.py).
      const measured = d.id === 'sim:h100-80gb' || d.id === 'sim:h200-141gb';
      expect(d.contextSource).toBe(measured ? 'measured' : 'estimated');
      expect(d.contextNote).toMatch(measured ? /^measured on an H[12]00/ : /^estimated: the H100's measured 767 MiB/);
      expect(d.free).toBe(d.total - d.context);
    }
  });

  it('`vramlab devices` prints a table and exits 0 without a GPU', async () => {
    const io = captureIO();
    expect(await main(['devices'], io)).toBe(0);
    expect(io.stdout()).toMatch(/sim:h100-80gb\s+NVIDIA H100 80GB \(simulated\)\s+79\.18 GiB\s+767\.00 MiB\s+measured/);
    expect(io.stdout()).toMatch(/sim:v100-16gb\s+NVIDIA Tesla V100 16GB \(simulated\)\s+15\.78 GiB\s+767\.00 MiB\s+estimated/);
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

// The whole card: a simulated preset holds its CUDA context and libraries outside the
// allocator, so what fits on sim:rtx4090-24gb is less than on a sim:custom device of the
// same total (which has no context), and the prediction, fit and CLI say why.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { native } from '../helpers/addon';
import { RunManager } from '../../main/runner/manager';
import { RunStore } from '../../main/store/store';
import { runFit } from '../../main/runner/fit';
import { Predictor } from '../../main/runner/predict';
import { parseSpec } from '../../main/contract/spec';
import { main } from '../../main/cli/main';
import type { CliIO } from '../../main/cli/io';

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));
function tmp(): string {
  const d = mkdtempSync(path.join(os.tmpdir(), 'vramlab-card-'));
  dirs.push(d);
  return d;
}

const PRESET = 'sim:rtx4090-24gb';
const card = () => native.listDevices().find((d) => d.id === PRESET)!;
// Wide enough that a batch step is far below the context (so the fit moves), one short iteration.
const SPEC = { model: { kind: 'residual', dim: 2048, depth: 2 }, optimizer: 'sgd', iterations: 1, batch: 1024 } as const;

describe('the CUDA context on the card', () => {
  it('is listed with every simulated preset, and the allocator gets the rest', () => {
    for (const d of native.listDevices().filter((x) => x.kind === 'sim')) {
      expect(d.context, d.id).toBeGreaterThan(0);
      expect(d.free, d.id).toBe(d.total - d.context);
    }
  });

  it('lowers what fit finds on a preset against a custom device of the same total', async () => {
    const { total, context } = card();
    const manager = new RunManager(native, await RunStore.open(tmp()));
    const onPreset = await runFit(manager, { ...SPEC, device: PRESET });
    const onCustom = await runFit(manager, { ...SPEC, device: `sim:custom:${total}` });
    expect([onPreset.total, onPreset.context]).toEqual([total, context]);
    expect([onCustom.total, onCustom.context]).toEqual([total, 0]);
    expect(onPreset.value).toBeGreaterThan(0);
    expect(onPreset.value).toBeLessThan(onCustom.value);
    // What fits leaves reserved + context within the card; the next value up does not.
    const best = onPreset.probes.find((p) => p.ok && p.value === onPreset.value)!;
    expect(best.peak_reserved + context).toBeLessThanOrEqual(total);

    // The prediction agrees: the custom device's largest batch OOMs on the preset.
    const predictor = new Predictor(native);
    const atEdge = await predictor.predict(parseSpec({ ...SPEC, device: PRESET, batch: onCustom.value }));
    expect(atEdge.status).toBe('oom');
    expect(atEdge.message).toMatch(/this process has [0-9.]+ [MG]iB memory in use/);
    expect([atEdge.total, atEdge.context]).toEqual([total, context]);
    const fits = await predictor.predict(parseSpec({ ...SPEC, device: PRESET, batch: onPreset.value }));
    expect(fits.status).toBe('done');
    expect(fits.peak_reserved + fits.context).toBeLessThanOrEqual(fits.total);
  }, 120_000);

  it('is in the CLI: devices, run and fit', async () => {
    const saved = process.env.VRAMLAB_HOME;
    const dir = tmp();
    process.env.VRAMLAB_HOME = path.join(dir, 'home');
    try {
      const cli = async (args: string[]) => {
        let out = '';
        const io: CliIO = { out: (t) => (out += t), err: () => {} };
        return { code: await main(args, io), out };
      };
      const devices = await cli(['devices']);
      expect(devices.out).toMatch(/CUDA context/);
      const f = path.join(dir, 'spec.json');
      writeFileSync(f, JSON.stringify({ ...SPEC, device: PRESET, batch: 256 }));
      const run = await cli(['run', f]);
      expect(run.code).toBe(0);
      expect(run.out).toMatch(
        /on the card: peak reserved [0-9.]+ [MG]iB \+ CUDA context [0-9.]+ MiB = [0-9.]+ [MG]iB of 23\.55 GiB \(what nvidia-smi shows\)/,
      );
      const json = JSON.parse((await cli(['run', f, '--json'])).out);
      expect(json.context).toBe(card().context);
      const fit = await cli(['fit', f, '--max', '512', '-q']);
      expect(fit.code).toBe(0);
      expect(fit.out).toMatch(/largest batch that fits on sim:rtx4090-24gb: 512/);
      expect(fit.out).toMatch(/peak reserved [0-9.]+ [MG]iB \+ CUDA context [0-9.]+ MiB = [0-9.]+ [MG]iB of 23\.55 GiB/);
    } finally {
      if (saved === undefined) delete process.env.VRAMLAB_HOME;
      else process.env.VRAMLAB_HOME = saved;
    }
  }, 120_000);
});

// `vramlab remedies` and the verdict in `vramlab run`: a second process through the built CLI
// (dist/cli.cjs, `npm run build:main`), against the simulator in this process.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { native } from '../helpers/addon';
import { parseSpec } from '../../main/contract/spec';
import { simulate } from '../../main/runner/simulate';

/** A device of the T4's model far larger than these jobs need (a sim:custom device has no
 *  context of its own). */
const UNBOUNDED = 'sim:custom:1TiB@t4-16gb';
import { cardMemory } from '../../main/runner/card_memory';

const dir = mkdtempSync(path.join(os.tmpdir(), 'vramlab-remedies-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const BIN = path.join(__dirname, '..', '..', 'bin', 'vramlab.js');
function cli(args: string[]): Promise<{ code: number; out: string; err: string }> {
  return new Promise((resolve) =>
    execFile(process.execPath, [BIN, ...args], { env: { ...process.env, VRAMLAB_HOME: dir } }, (e, out, err) =>
      resolve({ code: e ? Number(e.code ?? 1) : 0, out, err }),
    ),
  );
}
let n = 0;
function specFile(spec: unknown): string {
  const f = path.join(dir, `spec${n++}.json`);
  writeFileSync(f, JSON.stringify(spec));
  return f;
}
/** A small GPT that runs out of memory on a 16 GB card (about 20 GiB at batch 16). */
const GPT = { model: { kind: 'gpt', vocab: 50257, seq: 1024, dim: 512, depth: 4, heads: 8 }, batch: 16, device: 'sim:t4-16gb' };

describe('vramlab remedies', () => {
  it('says what an OOM spec needs and lists only changes that fit on its card', async () => {
    const spec = parseSpec(GPT);
    const unbounded = await simulate(native, spec, UNBOUNDED);
    const own = await simulate(native, spec, spec.device);
    expect(own.status).toBe('oom');
    const card = cardMemory(native, spec.device);
    const { code, out } = await cli(['remedies', specFile(GPT), '--json']);
    expect(code).toBe(0);
    const r = JSON.parse(out);
    expect(r.verdict).toMatchObject({ fits: false, on_card: unbounded.peak_reserved + card.context });
    expect(r.parameters).toBe(unbounded.num_parameters);
    expect(r.remedies.length).toBeGreaterThan(0);
    for (const remedy of r.remedies) {
      const s = parseSpec(remedy.spec);
      expect((await simulate(native, s, s.device)).status, remedy.id).toBe('done');
    }
    for (const rejected of r.rejected) expect(r.remedies.map((x: { id: string }) => x.id)).not.toContain(rejected.id);

    const human = await cli(['remedies', specFile(GPT)]);
    expect(human.out).toMatch(/^does not fit: needs \d+\.\d\d GiB on the card: short by \d+\.\d\d [MG]iB/);
    expect(human.out).toContain(r.remedies[0].label);
  }, 60_000);

  it('puts the verdict first in `vramlab run`, with the real parameter count after an OOM', async () => {
    const { out } = await cli(['run', specFile(GPT)]);
    const lines = out.split('\n');
    expect(lines[1]).toMatch(/^does not fit: needs .* short by /);
    expect(out).not.toMatch(/^0 parameters/m);
    expect(out).toMatch(/changes the simulator found to fit, cheapest first:\n {2}try /);
    const json = JSON.parse((await cli(['run', specFile(GPT), '--json'])).out);
    expect(json.verdict.fits).toBe(false);
    expect(json.parameters).toBeGreaterThan(0);
    // The summary CSV carries the verdict and the real parameter count too.
    const csvFile = path.join(dir, 'summary.csv');
    expect((await cli(['runs', 'export-summary', json.id, '--csv', csvFile])).code).toBe(0);
    const [header, row] = readFileSync(csvFile, 'utf8')
      .trim()
      .split(/\r?\n/)
      .map((l) => l.split(','));
    const cell = (k: string) => row[header.indexOf(k)];
    expect(cell('fits')).toBe('false');
    expect(Number(cell('on_card_bytes'))).toBe(json.verdict.on_card);
    expect(Number(cell('margin_bytes'))).toBe(json.verdict.margin);
    expect(Number(cell('margin_bytes'))).toBeLessThan(0);
    expect(Number(cell('parameters'))).toBe(json.parameters);
  }, 60_000);
});

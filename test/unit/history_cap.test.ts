// A run's allocator history stays bounded whatever the model's depth: whole iterations are
// thinned, the total is capped with a visible mark (summary.history, the snapshot pickle),
// and every export of the run (JSON, streamed JSON, snapshot, runs.get) succeeds and parses.
// Needs the addon (VRAMLAB_ADDON or build/Release).
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadAddon } from '../../main/addon/load';
import type { NativeAddon } from '../../main/addon/types';
import { RunStore } from '../../main/store/store';
import { RunManager } from '../../main/runner/manager';
import { parseSpec } from '../../main/contract/spec';
import { EventThinner, HISTORY_CAP } from '../../main/store/decimate';
import { runJson, runJsonPieces } from '../../main/export/json';
import { exportRunRecord, snapshotToBytes } from '../../main/snapshot/export';
import { readPickle } from '../../main/snapshot/pickle/reader';
import { Host } from '../../main/host/host';
import { registerRunMethods } from '../../main/runner/methods';
import type { RunEvent, RunMeta, RunRecord } from '../../main/contract/runs';

let native: NativeAddon;
beforeAll(() => {
  native = loadAddon();
});

const temps: string[] = [];
afterEach(() => {
  while (temps.length) rmSync(temps.pop()!, { recursive: true, force: true });
});
const tempHome = () => {
  const home = mkdtempSync(path.join(os.tmpdir(), 'vramlab-history-'));
  temps.push(home);
  return home;
};

async function joined(pieces: AsyncIterable<string>): Promise<string> {
  let s = '';
  for await (const p of pieces) s += p;
  return s;
}

/** Every kept phase that begins also ends, in nesting order. */
function phasesPaired(events: readonly RunEvent[]): boolean {
  const open: string[] = [];
  for (const e of events) {
    if (e.type !== 'phase') continue;
    if (e.edge === 'begin') open.push(`${e.name}/${e.iteration}/${e.module}`);
    else if (open.pop() !== `${e.name}/${e.iteration}/${e.module}`) return false;
  }
  return open.length === 0;
}

const phase = (edge: 'begin' | 'end', name: string, iteration: number): RunEvent => ({
  type: 'phase',
  t: 0,
  edge,
  name,
  iteration,
  micro_batch: -1,
  module: '',
});
const alloc = (action = 'alloc'): RunEvent => ({ type: 'alloc', t: 0, action, addr: 1, size: 512, category: '', module: '' });

describe('allocator history is bounded per run', () => {
  it('thins whole iterations, cuts at the cap keeping phases paired and the OOM, and says so', () => {
    const thin = new EventThinner(100, 800);
    const events: RunEvent[] = [];
    for (let it = 0; it < 8; it++) {
      events.push(phase('begin', 'iteration', it), phase('begin', 'forward', it));
      for (let k = 0; k < 300; k++) events.push(alloc());
      events.push(phase('end', 'forward', it), phase('end', 'iteration', it));
    }
    events.push(alloc('oom'));
    const kept = thin.push(events);
    expect(kept.length).toBeLessThanOrEqual(800 + 4);
    expect(phasesPaired(kept)).toBe(true);
    expect(kept.at(-1)).toMatchObject({ type: 'alloc', action: 'oom' });
    // Iterations 0 and 2 in full, 4 cut by the cap; 1 and 3 thinned away whole.
    const its = new Set(kept.filter((e) => e.type === 'phase').map((e) => (e as { iteration: number }).iteration));
    expect([...its]).toEqual([0, 2, 4]);
    expect(thin.history()).toEqual({ recorded: 8 * 300 + 1, kept: kept.filter((e) => e.type === 'alloc').length, truncated: true });
  });

  it('a deep checkpointed gpt stores bounded history marked truncated, streams viewers what it stores, and every export of it parses', async () => {
    const home = tempHome();
    const store = await RunStore.open(home);
    const live: RunEvent[] = [];
    const manager = new RunManager(native, store, { progress: (p) => live.push(...p.events) });
    // One iteration of this model makes more allocator events than a run may store.
    const spec = {
      model: { kind: 'gpt', depth: 512, dim: 64, heads: 1, seq: 64, vocab: 100 },
      batch: 1,
      iterations: 1,
      history: true,
      checkpoint: 'block',
    };
    const run = await manager.start(parseSpec(spec));
    const meta = await run.done;
    expect(meta.status).toBe('done');
    const h = meta.summary!.history!;
    expect(h.truncated).toBe(true);
    expect(h.recorded).toBeGreaterThan(HISTORY_CAP);
    expect(h.kept).toBeLessThanOrEqual(HISTORY_CAP);

    const rec = await store.get(run.runId);
    expect(rec.events.length).toBeLessThanOrEqual(HISTORY_CAP + 64);
    expect(rec.events.filter((e) => e.type === 'alloc')).toHaveLength(h.kept);
    expect(phasesPaired(rec.events)).toBe(true);
    // A viewer is sent the trace the store keeps (not every recorded event), and every phase.
    const allocs = (events: RunEvent[]) => events.filter((e) => e.type === 'alloc');
    expect(allocs(live)).toEqual(allocs(rec.events));
    expect(live.filter((e) => e.type === 'phase').length).toBeGreaterThanOrEqual(rec.events.filter((e) => e.type === 'phase').length);

    // Streamed JSON is the same text as the whole-string export, and valid.
    const streamed = await joined(runJsonPieces(rec.meta, () => store.chunks(run.runId)));
    expect(streamed).toBe(runJson(rec));
    expect(JSON.parse(streamed).meta.summary.history).toEqual(h);

    // The snapshot pickle carries the mark next to PyTorch's keys.
    const snap = readPickle(snapshotToBytes(exportRunRecord(rec))) as Map<string, unknown>;
    const mark = snap.get('vramlab_history') as Map<string, unknown>;
    expect(mark.get('truncated')).toBe(true);
    expect(mark.get('kept')).toBe(h.kept);

    // serve's and the app's replies: bounded, valid JSON.
    const host = new Host(native);
    registerRunMethods(host, native, { home });
    const got = await host.handle({ id: 1, method: 'runs.get', params: { id: run.runId } }, 'websocket');
    expect(got.ok).toBe(true);
    expect((got as { result: RunRecord }).result.events.length).toBe(rec.events.length);
    const exported = await host.handle({ id: 2, method: 'runs.exportJson', params: { id: run.runId } }, 'websocket');
    expect(exported.ok).toBe(true);
    expect(JSON.parse((exported as { result: { content: string } }).result.content).events).toHaveLength(rec.events.length);
    host.dispose();
  }, 120_000);

  it('a run stored before the cap is read bounded for replies and streamed whole by the export', async () => {
    const home = tempHome();
    const store = await RunStore.open(home);
    const id = '20200101-000000-abcdef';
    const dir = path.join(store.dir, id);
    mkdirSync(path.join(dir, 'chunks'), { recursive: true });
    const meta = {
      id,
      name: 'old',
      created: '2020-01-01T00:00:00.000Z',
      updated: '2020-01-01T00:00:00.000Z',
      status: 'done',
      device: 'sim:h100-80gb',
      spec: {},
      group: null,
      pid: 1,
      hostname: 'x',
      summary: null,
    } as unknown as RunMeta;
    writeFileSync(path.join(dir, 'meta.json'), JSON.stringify(meta));
    const total = HISTORY_CAP + 4096;
    for (let c = 0; c * 2048 < total; c++) {
      // an iteration-less history: only the cap bounds it
      const events = Array.from({ length: 2048 }, (_, i) => ({ ...alloc(), t: c * 2048 + i }));
      writeFileSync(path.join(dir, 'chunks', `${String(c + 1).padStart(6, '0')}.json`), JSON.stringify({ samples: [], events }));
    }
    const bounded = await store.get(id, { maxEvents: HISTORY_CAP });
    expect(bounded.events.length).toBeLessThanOrEqual(HISTORY_CAP);
    expect(bounded.decimated).toEqual({ samples: 0, events: total });
    const whole = JSON.parse(await joined(runJsonPieces(await store.meta(id), () => store.chunks(id))));
    expect(whole.events).toHaveLength(total);
  });
});

// A real `vramlab serve` (host, WebSocket server, native runs) and real WebSocket clients:
// the work all clients together can start is bounded server-wide, a client's work ends when
// its connection closes, and run events reach only the run's subscribers.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Host } from '../../main/host/host';
import { registerRunMethods, type WorkLoad } from '../../main/runner/methods';
import type { RunManager } from '../../main/runner/manager';
import { startServer, type RunningServer } from '../../main/server/server';
import { rendererDist } from '../../main/paths';
import { native } from '../helpers/addon';
import { parseFrame } from '../helpers/frames';

const MAX_RUNS = 3;
const MAX_PREDICTIONS = 2;
let dir = '';
let host: Host;
let server: RunningServer;
let manager: RunManager;
let load: () => WorkLoad;

beforeAll(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'vramlab-serve-work-'));
  host = new Host(native);
  const reg = registerRunMethods(host, native, { home: dir, maxRuns: MAX_RUNS, maxPredictions: MAX_PREDICTIONS });
  manager = await reg.manager();
  load = reg.load;
  server = await startServer({ host, rendererDir: rendererDist() });
});
afterAll(async () => {
  await server?.close();
  host?.dispose();
  rmSync(dir, { recursive: true, force: true });
});

const sockets: WebSocket[] = [];
afterEach(async () => {
  for (const ws of sockets.splice(0)) ws.terminate();
  await until(() => manager.activeRuns().length === 0 && load().runs === 0, 30_000);
});

/** A run of a second or so on a loaded 2-core machine. */
const spec = (iterations = 300, batch = 8) => ({ iterations, batch, model: { kind: 'mlp', in: 64, hidden: 64, out: 8, depth: 6 } });

async function until(ok: () => boolean, ms: number): Promise<void> {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 10));
  }
}

async function connect() {
  const ws = await new Promise<WebSocket>((resolve, reject) => {
    const w = new WebSocket(server.wsUrl);
    w.once('open', () => resolve(w));
    w.once('error', reject);
  });
  sockets.push(ws);
  const waiting = new Map<number, (m: any) => void>();
  const parts = new Map<number, string[]>();
  const events: { event: string; data: any }[] = [];
  ws.on('message', (d) => {
    let m = parseFrame(d);
    if (m.type === 'part') {
      const got = (parts.get(m.id) ?? []).concat(m.data);
      if (!m.last) return void parts.set(m.id, got);
      parts.delete(m.id);
      m = JSON.parse(got.join(''));
    }
    if (m.type === 'event') events.push(m);
    else if (m.type === 'response') waiting.get(m.id)?.(m);
  });
  let next = 1;
  return {
    ws,
    events,
    call: (method: string, params?: unknown): Promise<any> =>
      new Promise((resolve) => {
        const id = next++;
        waiting.set(id, resolve);
        ws.send(JSON.stringify({ id, method, params }));
      }),
  };
}

/** Samples `f` every few ms while `work` goes; resolves with the work's result and the highest value seen. */
async function watchMax<T>(f: () => number, work: Promise<T>): Promise<{ result: T; max: number }> {
  let max = f();
  const timer = setInterval(() => (max = Math.max(max, f())), 2);
  const result = await work.finally(() => clearInterval(timer));
  return { result, max: Math.max(max, f()) };
}

describe('serve bounds the work of all clients together', () => {
  it('12 run.start from one client: at most the cap run at once, the rest wait or are answered busy', async () => {
    const c = await connect();
    const all = (async () => {
      const replies = await Promise.all(Array.from({ length: 12 }, () => c.call('run.start', { spec: spec() })));
      const ids = replies.filter((r) => r.ok).map((r) => r.result.runId as string);
      await until(() => ids.every((id) => c.events.some((e) => e.event === 'run.done' && e.data.runId === id)), 60_000);
      return replies;
    })();
    const { result: replies, max } = await watchMax(() => manager.activeRuns().length, all);
    expect(max).toBeLessThanOrEqual(MAX_RUNS);
    expect(max).toBe(MAX_RUNS); // the load really reached the cap
    const ok = replies.filter((r) => r.ok).length;
    for (const r of replies) if (!r.ok) expect(r.error.code).toBe('unavailable');
    expect(ok).toBeGreaterThan(MAX_RUNS); // some waited for a slot instead of failing
  }, 90_000);

  it('a run waiting for a slot is given up when its client goes: it never starts', async () => {
    const a = await connect();
    const b = await connect();
    const before = (await manager.store.list()).length;
    const long = await Promise.all(Array.from({ length: MAX_RUNS }, () => a.call('run.start', { spec: spec(10_000) })));
    expect(long.every((r) => r.ok)).toBe(true);
    const waiting = b.call('run.start', { spec: spec() });
    await until(() => load().waiting === 1, 10_000);
    b.ws.close();
    await until(() => load().waiting === 0, 10_000);
    for (const r of long) await a.call('run.cancel', { runId: r.result.runId });
    await until(() => manager.activeRuns().length === 0, 30_000);
    expect((await manager.store.list()).length - before).toBe(MAX_RUNS);
    void waiting;
  }, 90_000);

  it('predictions from many connections: at most the cap simulate at once', async () => {
    const clients = await Promise.all(Array.from({ length: 4 }, () => connect()));
    const work = Promise.all(
      clients.flatMap((c) => Array.from({ length: 4 }, (_, k) => c.call('run.predict', { spec: spec(200, 8 + k), channel: `p${k}` }))),
    );
    const { result: replies, max } = await watchMax(() => load().predictions, work);
    expect(max).toBeLessThanOrEqual(MAX_PREDICTIONS);
    for (const r of replies) {
      if (r.ok) expect(r.result.status).toBe('done');
      else expect(r.error.code).toBe('unavailable');
    }
    expect(replies.filter((r) => r.ok).length).toBeGreaterThan(MAX_PREDICTIONS);
  }, 90_000);

  it('closing the connection stops its sweep: no run goes on and no new one starts', async () => {
    const c = await connect();
    const before = (await manager.store.list()).length;
    const values = Array.from({ length: 40 }, (_, i) => i + 1);
    void c.call('sweep.start', { spec: spec(), param: 'batch', values });
    await until(() => c.events.some((e) => e.event === 'run.progress'), 30_000);
    c.ws.close();
    await until(() => manager.activeRuns().length === 0 && load().runs === 0, 30_000);
    const after = (await manager.store.list()).length;
    await new Promise((r) => setTimeout(r, 800));
    expect((await manager.store.list()).length).toBe(after); // the count stopped growing
    expect(after - before).toBeLessThan(values.length);
    const swept = (await manager.store.list()).filter((m) => m.group?.kind === 'sweep');
    expect(swept.some((m) => m.status === 'cancelled')).toBe(true);
  }, 90_000);

  it('a sweep ends when its client cancels the run in progress (its id comes with the run events)', async () => {
    const c = await connect();
    const values = Array.from({ length: 40 }, (_, i) => i + 1);
    const sweep = c.call('sweep.start', { spec: spec(), param: 'batch', values });
    await until(() => c.events.some((e) => e.event === 'run.progress'), 30_000);
    const runId = c.events.find((e) => e.event === 'run.progress')!.data.runId;
    expect((await c.call('run.cancel', { runId })).result).toEqual({ cancelled: true });
    const r = await sweep;
    expect(r.ok).toBe(true);
    expect(r.result.runs.length).toBeLessThan(values.length);
    // Runs go a few at once: the cancelled one need not be the last in the values' order.
    expect(r.result.runs.some((x: { status: string }) => x.status === 'cancelled')).toBe(true);
  }, 90_000);

  it('a sweep with a workId reports n of N as each run ends, and work.cancel stops it', async () => {
    const c = await connect();
    const other = await connect();
    const values = Array.from({ length: 40 }, (_, i) => i + 1);
    const sweep = c.call('sweep.start', { workId: 'mine', spec: spec(), param: 'batch', values });
    const progress = () => c.events.filter((e) => e.event === 'work.progress').map((e) => e.data);
    await until(() => progress().length >= 2, 60_000);
    expect(progress().map((p) => [p.workId, p.kind, p.done, p.total])).toEqual(
      progress().map((_, i) => ['mine', 'sweep', i + 1, values.length]),
    );
    expect(progress()[0].row.status).toBe('done');
    // Another client cannot stop it: work ids belong to the client that named them.
    expect((await other.call('work.cancel', { workId: 'mine' })).result).toEqual({ cancelled: false });
    expect((await c.call('work.cancel', { workId: 'mine' })).result).toEqual({ cancelled: true });
    const r = await sweep;
    expect(r.ok).toBe(true);
    expect(r.result.runs.length).toBeGreaterThanOrEqual(2);
    expect(r.result.runs.length).toBeLessThan(values.length);
    // In the values' order, and every run it reported is in the answer.
    const order = r.result.runs.map((x: { value: number }) => values.indexOf(x.value));
    expect(order).toEqual([...order].sort((a: number, b: number) => a - b));
    await until(() => manager.activeRuns().length === 0 && load().runs === 0, 30_000);
    const after = (await manager.store.list()).length;
    await new Promise((res) => setTimeout(res, 800));
    expect((await manager.store.list()).length).toBe(after); // nothing started after the cancel
    expect(other.events).toEqual([]);
    // The work is over: its id is free and cancelling it again finds nothing.
    expect((await c.call('work.cancel', { workId: 'mine' })).result).toEqual({ cancelled: false });
  }, 90_000);

  it('closing the connection stops its fit', async () => {
    const c = await connect();
    void c.call('fit.start', { spec: spec(300, 1) });
    await until(() => c.events.some((e) => e.event === 'run.progress'), 30_000);
    c.ws.terminate();
    await until(() => manager.activeRuns().length === 0 && load().runs === 0, 30_000);
    const after = (await manager.store.list()).length;
    await new Promise((r) => setTimeout(r, 800));
    expect((await manager.store.list()).length).toBe(after);
  }, 90_000);
});

describe('run events go to their subscribers only', () => {
  it('an idle second client receives none of another client’s run events', async () => {
    const a = await connect();
    const idle = await connect();
    const r = await a.call('run.start', { spec: spec() });
    expect(r.ok).toBe(true);
    await until(() => a.events.some((e) => e.event === 'run.done' && e.data.runId === r.result.runId), 60_000);
    expect(a.events.filter((e) => e.event === 'run.progress').length).toBeGreaterThan(0);
    expect(idle.events).toEqual([]);
  }, 90_000);

  it('a client that subscribes to a running run receives its events', async () => {
    const a = await connect();
    const b = await connect();
    const r = await a.call('run.start', { spec: spec(10_000) });
    const sub = await b.call('run.subscribe', { runId: r.result.runId });
    expect(sub.result).toEqual({ subscribed: true });
    await until(() => b.events.some((e) => e.event === 'run.progress'), 30_000);
    await a.call('run.cancel', { runId: r.result.runId });
    await until(() => b.events.some((e) => e.event === 'run.done' && e.data.runId === r.result.runId), 30_000);
    for (const e of b.events) expect(e.data.runId).toBe(r.result.runId);
  }, 90_000);
});

// `vramlab serve` survives large replies and greedy clients and answers behind a port
// forward; against a real serve on loopback (real host, real ws). Before:
//  - a reply larger than one frame (a huge stored run) went through one JSON.stringify
//     in an async handler: a RangeError/TypeError there was unhandled and killed serve.
//  - no per-connection in-flight limit, no back-pressure, no idle timeout.
//  - behind a port forward (ssh -L) the Host check refused the forwarded port.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import net from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createHost } from '../../main/host/create';
import { startServer, type RunningServer } from '../../main/server/server';
import { rendererDist } from '../../main/paths';
import { RunStore } from '../../main/store/store';
import { parseSpec } from '../../main/contract/spec';
import type { Host } from '../../main/host/host';
import type { MemorySample } from '../../main/contract/runs';
import { native } from '../helpers/addon';
import { parseFrame } from '../helpers/frames';

let dir = '';
let host: Host;
let server: RunningServer;
let bigRun = '';
const BIG_SAMPLES = 300_000;
let bigPeak = 0;

beforeAll(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'vramlab-serve-'));
  // A run stored before timelines were decimated: 300k samples, ~45 MB of chunks.
  const store = await RunStore.open(dir);
  const w = await store.create(parseSpec({}), { name: 'huge' });
  for (let c = 0; c < BIG_SAMPLES / 2000; c++) {
    const batch: MemorySample[] = [];
    for (let i = 0; i < 2000; i++) {
      const t = c * 2000 + i;
      bigPeak = Math.max(bigPeak, (t * 7919) % 1_000_003);
      batch.push({
        t,
        allocated: (t * 7919) % 1_000_003,
        reserved: 2_000_000 + (t % 977),
        active: 0,
        requested: 0,
        by: [0, 0, 0, 0, 0, 0, 0, 0],
      });
    }
    w.append(batch, []);
    await w.flush();
  }
  await w.finish('done', null);
  bigRun = w.id;
  host = createHost(native, { home: dir });
  // Test-only methods outside the contract (Host.register is typed from it; the host
  // dispatches any registered name and checks params only for the contract's methods).
  const registerTest = (method: string, handler: (p: unknown) => unknown) =>
    (host.register as unknown as (m: string, h: (p: unknown) => unknown) => void).call(host, method, handler);
  registerTest('test.sleep', async (p) => new Promise((r) => setTimeout(() => r('slept'), (p as { ms: number }).ms)));
  registerTest('test.bigint', () => ({ n: 1n }));
  registerTest('test.blob', (p) => 'x'.repeat((p as { bytes: number }).bytes));
  server = await startServer({
    host,
    rendererDir: rendererDist(),
    limits: { maxInFlight: 4, highWater: 1 << 20, idleMs: 600, pingMs: 250 },
  });
}, 120_000);
afterAll(async () => {
  await server?.close();
  host?.dispose();
  rmSync(dir, { recursive: true, force: true });
});

function open(url: string, headers: Record<string, string> = {}): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers });
    ws.once('open', () => resolve(ws));
    ws.once('unexpected-response', (_q, res) => reject(new Error(`HTTP ${res.statusCode}`)));
    ws.once('error', reject);
  });
}

/** Replies by id, joining 'part' frames as the renderer's transport does. */
function client(ws: WebSocket) {
  const waiting = new Map<number, (m: any) => void>();
  const parts = new Map<number, string[]>();
  let frames = 0;
  ws.on('message', (d) => {
    frames++;
    let m = parseFrame(d);
    if (m.type === 'part') {
      const got = (parts.get(m.id) ?? []).concat(m.data);
      if (!m.last) return void parts.set(m.id, got);
      parts.delete(m.id);
      m = JSON.parse(got.join(''));
    }
    if (m.type === 'response') waiting.get(m.id)?.(m);
  });
  let next = 1;
  return {
    call: (method: string, params?: unknown): Promise<any> =>
      new Promise((resolve) => {
        const id = next++;
        waiting.set(id, resolve);
        ws.send(JSON.stringify({ id, method, params }));
      }),
    frames: () => frames,
  };
}

describe('large replies', () => {
  it('a 300k-sample run comes back in parts, decimated to a bounded size with its peak, and serve stays up', async () => {
    const ws = await open(server.wsUrl);
    const c = client(ws);
    const res = await c.call('runs.get', { id: bigRun });
    expect(res.ok).toBe(true);
    expect(c.frames()).toBeGreaterThan(5); // parts, not one frame
    const rec = res.result;
    expect(rec.decimated).toEqual({ samples: BIG_SAMPLES, events: 0 });
    expect(rec.timeline.length).toBeLessThanOrEqual(200_000);
    expect(Math.max(...rec.timeline.map((s: MemorySample) => s.allocated))).toBe(bigPeak);
    expect((await c.call('devices.list')).ok).toBe(true);
    ws.close();
  });

  it('a reply that cannot be serialized is an error reply (was: unhandled rejection, serve exits)', async () => {
    const ws = await open(server.wsUrl);
    const c = client(ws);
    const res = await c.call('test.bigint');
    expect(res).toMatchObject({ ok: false, error: { code: 'failed' } });
    expect(res.error.message).toMatch(/BigInt/);
    expect((await c.call('devices.list')).ok).toBe(true);
    ws.close();
  });
});

describe('slow and greedy clients', () => {
  it('more requests in flight than the limit are answered "busy", the rest complete', async () => {
    const ws = await open(server.wsUrl);
    const c = client(ws);
    const replies = await Promise.all(Array.from({ length: 12 }, () => c.call('test.sleep', { ms: 150 })));
    expect(replies.filter((r) => r.ok)).toHaveLength(4);
    expect(replies.filter((r) => !r.ok && /busy/.test(r.error.message))).toHaveLength(8);
    ws.close();
  });

  it('a client that stops reading is not fed without bound: serve stops reading its requests', async () => {
    const ws = await open(server.wsUrl);
    const raw = (ws as unknown as { _socket: net.Socket })._socket;
    raw.pause(); // we read nothing from now on
    for (let i = 0; i < 64; i++) ws.send(JSON.stringify({ id: i + 1, method: 'test.blob', params: { bytes: 512 << 10 } })); // 32 MB asked for
    await new Promise((r) => setTimeout(r, 300));
    // Without back-pressure all 32 MB would sit in serve's buffer for this socket.
    expect(server.stats().maxBuffered).toBeLessThan(4 << 20);
    raw.resume();
    ws.terminate();
  });

  it('an idle client is disconnected', async () => {
    const ws = await open(server.wsUrl);
    const closed = new Promise<number>((r) => ws.once('close', (code) => r(code)));
    const t0 = Date.now();
    await closed;
    expect(Date.now() - t0).toBeLessThan(2000);
  });
});

describe('behind a local port forward', () => {
  let fwd: net.Server;
  let fwdPort = 0;
  beforeAll(async () => {
    // A TCP forwarder, as `ssh -L <fwdPort>:127.0.0.1:<port>` would be.
    fwd = net.createServer((c) => {
      const up = net.connect(server.port, '127.0.0.1');
      c.pipe(up).pipe(c);
      c.on('error', () => up.destroy());
      up.on('error', () => c.destroy());
    });
    await new Promise<void>((r) => fwd.listen(0, '127.0.0.1', () => r()));
    fwdPort = (fwd.address() as net.AddressInfo).port;
  });
  afterAll(() => fwd.close());

  const via = (name: string) => server.wsUrl.replace(/\/\/[^/]+\//, `//${name}:${fwdPort}/`);

  it('accepts the forwarded port from its own page origin (was: 403 unexpected Host)', async () => {
    for (const name of ['127.0.0.1', 'localhost']) {
      const ws = await open(via(name), { Origin: `http://${name}:${fwdPort}` });
      expect((await client(ws).call('devices.list')).ok).toBe(true);
      ws.close();
    }
  });

  it('still refuses other sites, through the forward too', async () => {
    await expect(open(via('127.0.0.1'), { Origin: 'http://evil.example' })).rejects.toThrow('HTTP 403');
    await expect(open(via('127.0.0.1'), { Origin: `http://localhost:${fwdPort + 1}` })).rejects.toThrow('HTTP 403');
    await expect(open(via('127.0.0.1'), { Host: `evil.example:${fwdPort}` })).rejects.toThrow('HTTP 403');
    await expect(open(via('127.0.0.1').replace(/token=[^&]+/, 'token=nope'))).rejects.toThrow('HTTP 403');
  });
});

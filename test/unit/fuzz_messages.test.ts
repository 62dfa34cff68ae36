// 10,000 random and malformed messages through Host.handle (the IPC path) and through a
// real WebSocket to the server: each gets a well-formed reply (an error for anything
// malformed), and the host keeps serving. Needs the addon (VRAMLAB_ADDON or build/Release).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import WebSocket from 'ws';
import { loadAddon } from '../../main/addon/load';
import { createHost } from '../../main/host/create';
import type { Host } from '../../main/host/host';
import { methods, MAX_MESSAGE_BYTES, type Response } from '../../main/contract';
import { startServer } from '../../main/server/server';
import { parseFrame } from '../helpers/frames';

const COUNT = 10_000;

function rng(seed: number) {
  // mulberry32: reproducible fuzz runs
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const METHOD_NAMES = Object.keys(methods);
const KEYS = [
  'id',
  'method',
  'params',
  'spec',
  'runId',
  'name',
  'ids',
  'param',
  'values',
  'batch',
  'model',
  'kind',
  '__proto__',
  'constructor',
  'prototype',
  'toString',
  'capacity',
  'device',
  'alloc_conf',
  '',
];
const STRINGS = [
  '',
  'x',
  '../../etc/passwd',
  '20261121-100000-abcdef',
  'run.start',
  '\u0000\uffff',
  'sim:h100-80gb',
  '9'.repeat(400),
  '{"id":1}',
  'NaN',
  '🙂',
  'cuda:99',
];

function value(r: () => number, depth = 0): unknown {
  const k = Math.floor(r() * (depth > 3 ? 6 : 9));
  switch (k) {
    case 0:
      return null;
    case 1:
      return r() < 0.5;
    case 2:
      return [0, -1, 1.5, 2 ** 53, -(2 ** 31), 1e308, 256, Number.MAX_SAFE_INTEGER][Math.floor(r() * 8)];
    case 3:
      return STRINGS[Math.floor(r() * STRINGS.length)];
    case 4:
      return Math.floor(r() * 1e6);
    case 5:
      return undefined;
    case 6:
      return Array.from({ length: Math.floor(r() * 4) }, () => value(r, depth + 1));
    default: {
      const o: Record<string, unknown> = {};
      for (let i = Math.floor(r() * 4); i > 0; i--) o[KEYS[Math.floor(r() * KEYS.length)]] = value(r, depth + 1);
      return o;
    }
  }
}

/** A message: mostly request-shaped with something wrong, sometimes arbitrary garbage. */
function message(r: () => number): unknown {
  const k = r();
  if (k < 0.15) return value(r);
  const msg: Record<string, unknown> = {
    id: r() < 0.8 ? Math.floor(r() * 1e6) : value(r),
    method: r() < 0.85 ? METHOD_NAMES[Math.floor(r() * METHOD_NAMES.length)] : value(r),
  };
  if (r() < 0.9) msg.params = value(r);
  // Never a spec that would run: fuzzing is about the reply path, not about starting work.
  const p = msg.params as Record<string, unknown> | undefined;
  if (p && typeof p === 'object' && 'spec' in p)
    (p as Record<string, unknown>).spec = { ...(typeof p.spec === 'object' && p.spec ? p.spec : {}), batch: 0 };
  if (r() < 0.05) delete msg.id;
  return msg;
}

function wellFormed(res: Response): void {
  expect(typeof res).toBe('object');
  expect(typeof res.ok).toBe('boolean');
  if (!res.ok) {
    expect(['bad_request', 'unknown_method', 'invalid_params', 'failed', 'unavailable']).toContain(res.error.code);
    expect(typeof res.error.message).toBe('string');
    expect(res.error.message.length).toBeGreaterThan(0);
  }
}

let home = '';
let host: Host;
beforeAll(() => {
  home = mkdtempSync(path.join(os.tmpdir(), 'vramlab-fuzz-'));
  host = createHost(loadAddon(), { home });
});
afterAll(() => rmSync(home, { recursive: true, force: true }));

describe('fuzzing the host', () => {
  it(`answers ${COUNT} random and malformed messages through Host.handle and keeps serving`, async () => {
    const r = rng(0xc0ffee);
    let errors = 0;
    for (let i = 0; i < COUNT; i++) {
      const res = await host.handle(message(r), 'ipc');
      wellFormed(res);
      if (!res.ok) errors++;
    }
    expect(errors).toBeGreaterThan(COUNT * 0.8);
    const info = await host.handle({ id: 1, method: 'app.info' }, 'ipc');
    expect(info.ok).toBe(true);
    const list = await host.handle({ id: 2, method: 'runs.list' }, 'ipc');
    expect(list).toEqual({ id: 2, ok: true, result: [] }); // nothing was started
  }, 120_000);

  it('rejects hostile params with clear errors', async () => {
    const bad = [
      { id: 1, method: 'run.start', params: { spec: { batch: -1 } } },
      { id: 2, method: 'runs.get', params: { id: '../../../etc/passwd' } },
      { id: 3, method: 'runs.delete', params: { id: '20261121-100000-abcdef' } },
      { id: 4, method: 'runs.exportCsv', params: { id: 'a', ids: ['b'] } },
      { id: 5, method: 'sweep.start', params: { spec: {}, param: 'colour', values: [1] } },
      { id: 6, method: 'run.start', params: { spec: { device: 'sim:nonesuch' } } },
      { id: 7, method: 'fit.start', params: { spec: { batch: 1e9 } } },
    ];
    const replies = await Promise.all(bad.map((m) => host.handle(m, 'ipc')));
    for (const res of replies) {
      wellFormed(res);
      expect(res.ok).toBe(false);
    }
    const msg = (i: number) => (replies[i] as Extract<Response, { ok: false }>).error.message;
    expect(msg(0)).toMatch(/spec\.batch: must be an integer from 1/);
    expect(msg(1)).toMatch(/no run/);
    expect(msg(2)).toMatch(/no run "20261121-100000-abcdef"/);
    expect(msg(3)).toMatch(/either id .* or ids/);
    expect(msg(4)).toMatch(/param/);
    expect(msg(5)).toMatch(/nonesuch/);
    expect(msg(6)).toMatch(/spec\.batch/);
  });
});

describe('fuzzing the WebSocket server', () => {
  it(`answers ${COUNT} random, malformed, binary and oversized frames and keeps serving`, async () => {
    const rendererDir = mkdtempSync(path.join(os.tmpdir(), 'vramlab-fuzz-renderer-'));
    const server = await startServer({ host, port: 0, rendererDir });
    try {
      const r = rng(0xbadc0de);
      const open = async () => {
        const ws = new WebSocket(server.wsUrl);
        await new Promise<void>((resolve, reject) => {
          ws.once('open', () => resolve());
          ws.once('error', reject);
        });
        return ws;
      };
      let ws = await open();
      let replies = 0;
      let errors = 0;
      const onMessage = (data: WebSocket.RawData) => {
        const msg = parseFrame(data);
        if (msg.type !== 'response') return;
        wellFormed(msg);
        replies++;
        if (!msg.ok) errors++;
      };
      ws.on('message', onMessage);
      const CHUNK = 500;
      for (let sent = 0; sent < COUNT; sent += CHUNK) {
        const before = replies;
        for (let i = 0; i < CHUNK; i++) {
          const k = r();
          if (k < 0.1) ws.send(Buffer.from([0xff, 0x00, Math.floor(r() * 256)]), { binary: true });
          else if (k < 0.25)
            ws.send(['{', '{"id":', 'not json', '[1,2', '"unterminated', '{"id":1,"method":"app.info"', '\u0000'][Math.floor(r() * 7)]);
          else ws.send(JSON.stringify(message(r)) ?? 'undefined');
        }
        await until(() => replies - before === CHUNK, 20_000);
      }
      expect(replies).toBe(COUNT);
      expect(errors).toBeGreaterThan(COUNT * 0.8);

      // An oversized frame closes that connection (1009), not the server.
      const closed = new Promise<number>((resolve) => ws.once('close', (code) => resolve(code)));
      ws.send('x'.repeat(MAX_MESSAGE_BYTES + 10));
      expect(await closed).toBe(1009);

      ws = await open();
      const answer = new Promise<Record<string, unknown>>((resolve) => ws.once('message', (d) => resolve(parseFrame(d))));
      ws.send(JSON.stringify({ id: 42, method: 'app.info' }));
      const info = await answer;
      expect(info).toMatchObject({ type: 'response', id: 42, ok: true, result: { transport: 'websocket' } });
      ws.close();
    } finally {
      await server.close();
      rmSync(rendererDir, { recursive: true, force: true });
    }
  }, 180_000);
});

async function until(cond: () => boolean, timeoutMs: number): Promise<void> {
  const t0 = Date.now();
  while (!cond()) {
    if (Date.now() - t0 > timeoutMs) throw new Error('timed out waiting for replies');
    await new Promise((r) => setTimeout(r, 2));
  }
}

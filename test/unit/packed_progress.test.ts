// Run progress as the transports carry it (main/contract/packed_progress.ts): a real run's
// batches survive packing unchanged, the frame stays within the bound, and every short, long,
// inconsistent or hostile frame is refused with a PackedFrameError naming what is wrong.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import WebSocket from 'ws';
import { RunStore } from '../../main/store/store';
import { RunManager } from '../../main/runner/manager';
import { parseSpec } from '../../main/contract/spec';
import { CATEGORIES, type RunEvent, type RunProgress } from '../../main/contract/runs';
import {
  MAX_PACKED_BYTES,
  PACKED_MAGIC,
  PackedFrameError,
  packEvent,
  packProgress,
  unpackEvent,
  unpackProgress,
} from '../../main/contract/packed_progress';
import { MAX_FRAME_CHARS } from '../../main/contract/messages';
import { startTestServer } from '../helpers/server';
import { parseFrame } from '../helpers/frames';
import { native } from '../helpers/addon';

let home: string;
const batches: RunProgress[] = [];

beforeAll(async () => {
  // A real run with allocator history: its batches are what the transports carry.
  home = mkdtempSync(path.join(os.tmpdir(), 'vramlab-packed-'));
  const manager = new RunManager(native, await RunStore.open(home), { progress: (p) => batches.push(p) });
  const run = await manager.start(
    parseSpec({
      model: { kind: 'mlp', in: 256, hidden: 256, out: 16, depth: 3 },
      batch: 16,
      iterations: 3,
      optimizer: 'adam',
      history: true,
    }),
  );
  expect((await run.done).status).toBe('done');
});
afterAll(() => rmSync(home, { recursive: true, force: true }));

const sample = (t: number) => ({
  t,
  allocated: 2 ** 40 + t,
  reserved: 2 ** 41,
  active: 5,
  requested: 3,
  by: CATEGORIES.map((_, i) => i * 512),
});

function crafted(): RunProgress {
  const events: RunEvent[] = [
    { type: 'phase', t: 0, edge: 'begin', name: 'iteration', iteration: 0, micro_batch: -1, module: '' },
    {
      type: 'alloc',
      t: 1,
      action: 'alloc',
      addr: 2 ** 52 + 512,
      size: 100,
      blockSize: 512,
      category: 'kv_cache',
      module: 'h.0.attn',
      op: 'cat',
    },
    { type: 'alloc', t: 2, action: 'segment_alloc', addr: 0, size: 2 << 20, category: '', module: '' },
    { type: 'alloc', t: 3, action: 'free', addr: 2 ** 52 + 512, size: 100, blockSize: 512, category: 'kv_cache', module: 'h.0.attn' },
    { type: 'phase', t: 4, edge: 'end', name: 'module', iteration: 12, micro_batch: 3, module: 'h.0 “ünïcode”' },
  ];
  const samples = [sample(0.5), sample(1.5), sample(3.25)];
  return { runId: 'r-1', samples, events, dropped: 7, latest: samples[2], phase: 'decode', iteration: 12, seq: 41 };
}

/** A valid frame to break, as a fresh ArrayBuffer. */
const frame = (p = crafted()) => packProgress(p)!.slice().buffer;

function refused(buf: ArrayBuffer | Uint8Array, why: RegExp) {
  expect(() => unpackProgress(buf)).toThrow(PackedFrameError);
  expect(() => unpackProgress(buf)).toThrow(why);
}

describe('packed run progress: round trip', () => {
  it("a real run's batches come back as they went, every one within the frame bound", () => {
    const events = batches.flatMap((b) => b.events);
    expect(events.some((e) => e.type === 'alloc')).toBe(true);
    expect(events.some((e) => e.type === 'phase')).toBe(true);
    for (const b of batches) {
      const bytes = packProgress(b);
      expect(bytes).not.toBeNull();
      expect(bytes!.byteLength).toBeLessThanOrEqual(MAX_FRAME_CHARS);
      expect(unpackProgress(bytes!)).toEqual(b);
    }
  });

  it('keeps absent fields absent, 2^52 addresses, empty categories and non-ASCII module names', () => {
    const p = crafted();
    const back = unpackProgress(frame(p));
    expect(back).toEqual(p);
    expect('blockSize' in back.events[2]).toBe(false);
    expect('op' in back.events[3]).toBe(false);
    const empty: RunProgress = { ...p, samples: [], events: [], latest: null };
    expect(unpackProgress(frame(empty))).toEqual(empty);
  });

  it('reads a frame at any byte offset of a larger buffer (Node hands over pooled Buffers)', () => {
    const bytes = packProgress(crafted())!;
    const big = new Uint8Array(bytes.length + 3);
    big.set(bytes, 3);
    expect(unpackProgress(big.subarray(3))).toEqual(crafted());
    expect(unpackEvent(Buffer.from(bytes))).toEqual({ event: 'run.progress', data: crafted() });
  });

  it('packs run progress only; a batch over the bound is left to JSON', () => {
    expect(packEvent({ event: 'run.done', data: { runId: 'x' } })).toBeNull();
    expect(packEvent({ event: 'run.progress', data: crafted() })).toBeInstanceOf(Uint8Array);
    const long = crafted();
    long.events = Array.from(
      { length: 40 },
      (_, i) => ({ ...(long.events[1] as RunEvent), module: `m${i}`.padEnd(40_000, 'x') }) as RunEvent,
    );
    expect(packProgress(long)).toBeNull();
  });
});

describe('packed run progress: malformed frames are refused', () => {
  it('every truncation of a valid frame, and one byte more', () => {
    const bytes = new Uint8Array(frame());
    for (let n = 0; n < bytes.length; n++) refused(bytes.slice(0, n), /malformed run.progress frame/);
    const longer = new Uint8Array(bytes.length + 1);
    longer.set(bytes);
    refused(longer, /do not make/);
  });

  it('a frame over the bound is refused before it is read', () => {
    refused(new Uint8Array(MAX_PACKED_BYTES + 1), /more than the/);
  });

  it('a wrong magic, version, category count or reserved word', () => {
    const at = (word: number, value: number) => {
      const b = frame();
      new Uint32Array(b, 0, 6)[word] = value;
      return b;
    };
    refused(at(0, 0x7b227479), /VLPK magic/); // '{"ty' of a JSON frame
    refused(at(1, 2 | (CATEGORIES.length << 16)), /version 2/);
    refused(at(1, 1 | ((CATEGORIES.length + 1) << 16)), /memory categories/);
    refused(at(5, 1), /reserved head word/);
  });

  it('counts that overflow or do not add up to the length', () => {
    const changed = (word: number, to: (was: number) => number) => {
      const b = frame();
      const u = new Uint32Array(b, 0, 6);
      u[word] = to(u[word]);
      return b;
    };
    refused(
      changed(2, () => 0xffffffff),
      /do not make/,
    ); // header bytes
    refused(
      changed(3, () => 0xffffffff),
      /do not make/,
    ); // samples
    refused(
      changed(4, () => 0x40000000),
      /do not make/,
    ); // events
    refused(
      changed(3, (n) => n + 1),
      /do not make/,
    );
    refused(
      changed(4, (n) => n - 1),
      /do not make/,
    );
  });

  it('a header that is not UTF-8 JSON of the right fields', () => {
    const withHeader = (text: string | Uint8Array) => {
      const good = new Uint8Array(frame({ ...crafted(), samples: [], events: [], latest: null }));
      const h = typeof text === 'string' ? new TextEncoder().encode(text) : text;
      const out = new Uint8Array(24 + ((h.length + 7) & ~7));
      out.set(good.subarray(0, 24));
      new DataView(out.buffer).setUint32(8, h.length, true);
      out.set(h, 24);
      return out;
    };
    const ok = { runId: 'r', dropped: 0, phase: '', iteration: -1, seq: 0, strings: [] };
    expect(unpackProgress(withHeader(JSON.stringify(ok))).runId).toBe('r');
    refused(withHeader(new Uint8Array([0x7b, 0xff, 0x7d])), /not UTF-8 JSON/);
    refused(withHeader('[1,2]'), /not an object/);
    refused(withHeader(JSON.stringify({ ...ok, runId: 5 })), /run id/);
    refused(withHeader(JSON.stringify({ ...ok, runId: 'x'.repeat(129) })), /run id/);
    refused(withHeader(JSON.stringify({ ...ok, seq: -1 })), /seq/);
    refused(withHeader(JSON.stringify({ ...ok, dropped: 1.5 })), /dropped/);
    refused(withHeader(JSON.stringify({ ...ok, iteration: 'x' })), /iteration/);
    refused(withHeader(JSON.stringify({ ...ok, strings: [1] })), /strings/);
  });

  it('columns out of range: string indices, kinds, categories, edges, non-finite numbers', () => {
    const p = crafted();
    const S = p.samples.length;
    const E = p.events.length;
    const bytes = new Uint8Array(frame(p));
    const H = new DataView(bytes.buffer).getUint32(8, true);
    const f64At = 24 + ((H + 7) & ~7);
    const i32At = f64At + 8 * ((5 + CATEGORIES.length) * S + 4 * E);
    const setI32 = (col: number, k: number, v: number) => {
      const b = bytes.slice();
      new DataView(b.buffer).setInt32(i32At + 4 * (col * E + k), v, true);
      return b;
    };
    const setF64 = (index: number, v: number) => {
      const b = bytes.slice();
      new DataView(b.buffer).setFloat64(f64At + 8 * index, v, true);
      return b;
    };
    refused(setI32(0, 1, 2), /kind is 2/);
    refused(setI32(1, 1, 99), /names string 99/);
    refused(setI32(2, 0, -5), /names string -5/);
    refused(setI32(3, 1, 1000), /names string 1000/);
    refused(setI32(4, 1, CATEGORIES.length), /category/);
    refused(setI32(3, 0, 2), /edge is 2/);
    refused(setI32(5, 1, 1), /micro-batch/);
    refused(setF64(0, Number.NaN), /a sample holds NaN/);
    refused(setF64(S + 1, Number.POSITIVE_INFINITY), /a sample holds Infinity/);
    const eventT = (5 + CATEGORIES.length) * S;
    refused(setF64(eventT + 2, Number.NaN), /an event holds NaN/);
    refused(setF64(eventT + E, 64), /phase marker has allocator fields/);
  });

  it('5,000 random corruptions of valid frames: each is read or refused, never anything else', () => {
    let seed = 12345;
    const rand = () => (seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32;
    const base = new Uint8Array(frame(batches.find((b) => b.events.length > 10) ?? crafted()));
    let read = 0;
    for (let i = 0; i < 5_000; i++) {
      const b = base.slice();
      for (let k = 1 + Math.floor(rand() * 4); k > 0; k--) b[Math.floor(rand() * b.length)] = Math.floor(rand() * 256);
      try {
        unpackProgress(b);
        read++;
      } catch (err) {
        expect(err).toBeInstanceOf(PackedFrameError);
      }
    }
    expect(read).toBeLessThan(5_000);
  });
});

describe('packed run progress over `vramlab serve`', () => {
  it("a client receives the run's progress as binary frames that decode to the stored run's allocator events", async () => {
    const server = await startTestServer(mkdtempSync(path.join(os.tmpdir(), 'vramlab-packed-serve-')));
    const ws = new WebSocket(server.wsUrl);
    try {
      await new Promise((r, j) => (ws.once('open', r), ws.once('error', j)));
      const progress: RunProgress[] = [];
      let binary = 0;
      let runId = '';
      const done = new Promise<void>((resolve) =>
        ws.on('message', (d, isBinary) => {
          const m = parseFrame(d as Buffer);
          if (isBinary) binary++;
          if (m.type === 'response' && m.id === 1) runId = m.result.runId;
          if (m.event === 'run.progress') progress.push(m.data);
          if (m.event === 'run.done') resolve();
        }),
      );
      const spec = {
        model: { kind: 'mlp', in: 256, hidden: 256, out: 16, depth: 3 },
        batch: 16,
        iterations: 3,
        optimizer: 'adam',
        history: true,
      };
      ws.send(JSON.stringify({ id: 1, method: 'run.start', params: { spec } }));
      await done;
      expect(progress.length).toBeGreaterThan(0);
      expect(binary).toBe(progress.length);
      expect(progress.map((p) => p.seq)).toEqual(progress.map((_, i) => i));
      const stored = await server.host.handle({ id: 2, method: 'runs.get', params: { id: runId } }, 'websocket');
      const allocs = (es: RunEvent[]) => es.filter((e) => e.type === 'alloc');
      expect(stored.ok).toBe(true);
      const rec = (stored as { result: { events: RunEvent[] } }).result;
      expect(allocs(progress.flatMap((p) => p.events))).toEqual(allocs(rec.events));
      expect(allocs(rec.events).length).toBeGreaterThan(0);
    } finally {
      ws.close();
      await server.close();
    }
  }, 60_000);

  it('refuses packed frames a client sends, as any binary frame', async () => {
    const server = await startTestServer(mkdtempSync(path.join(os.tmpdir(), 'vramlab-packed-serve-')));
    const ws = new WebSocket(server.wsUrl);
    try {
      await new Promise((r, j) => (ws.once('open', r), ws.once('error', j)));
      const reply = new Promise((r) => ws.once('message', (d) => r(parseFrame(d as Buffer))));
      ws.send(packProgress(crafted())!, { binary: true });
      expect(await reply).toMatchObject({ ok: false, error: { code: 'bad_request', message: expect.stringMatching(/binary frames/) } });
      expect(new DataView(packProgress(crafted())!.buffer).getUint32(0, true)).toBe(PACKED_MAGIC);
    } finally {
      ws.close();
      await server.close();
    }
  }, 30_000);
});

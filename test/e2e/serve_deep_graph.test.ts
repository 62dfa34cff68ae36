// `vramlab serve` in its own process survives the spec that used to kill it: llama at
// depth 4096 overflowed the run thread's stack while freeing its autograd graph (SIGSEGV),
// through `run.predict` (the panel predicts while you type) and `run.start` alike.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { parseFrame } from '../helpers/frames';

const root = path.resolve(__dirname, '../..');
// The spec at tiny widths (same graph depth, a fraction of the work).
const DEEP_LLAMA = {
  model: { kind: 'llama', depth: 4096, dim: 8, heads: 1, kv_heads: 1, ffn: 8, vocab: 8, seq: 8 },
  batch: 1,
  iterations: 1,
  optimizer: 'sgd',
};
// A loaded 2-core machine runs it in a few seconds; leave room.
const SLOW = 240_000;

let home = '';
let serve: ChildProcess;
let exited: { code: number | null; signal: NodeJS.Signals | null } | null = null;
let ws: WebSocket;
const waiting = new Map<number, (m: any) => void>();
const events: any[] = [];
let nextId = 1;

function call(method: string, params?: unknown): Promise<any> {
  return new Promise((resolve) => {
    const id = nextId++;
    waiting.set(id, resolve);
    ws.send(JSON.stringify({ id, method, params }));
  });
}

beforeAll(async () => {
  home = mkdtempSync(path.join(os.tmpdir(), 'vramlab-serve-deep-'));
  serve = spawn(process.execPath, [path.join(root, 'bin/vramlab.js'), 'serve'], {
    cwd: root,
    env: { ...process.env, VRAMLAB_HOME: home },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  serve.once('exit', (code, signal) => {
    exited = { code, signal };
    // A dead server answers nothing: fail the waiting calls now rather than by timeout.
    for (const r of waiting.values()) r({ ok: false, error: { message: `serve exited (${signal ?? code})` } });
    waiting.clear();
  });
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    serve.stdout!.on('data', (d) => {
      out += d;
      const m = /(http:\/\/\S+\?token=\S+)/.exec(out);
      if (m) resolve(m[1]);
    });
    serve.once('exit', (code) => reject(new Error(`serve exited ${code}`)));
  });
  ws = new WebSocket(url.replace('http://', 'ws://').replace('/?token=', '/ws?token='), { maxPayload: 256 << 20 });
  await new Promise((resolve, reject) => (ws.once('open', resolve), ws.once('error', reject)));
  const parts = new Map<number, string>();
  ws.on('message', (d) => {
    let m = parseFrame(d);
    if (m.type === 'part') {
      parts.set(m.id, (parts.get(m.id) ?? '') + m.data);
      if (!m.last) return;
      m = JSON.parse(parts.get(m.id)!);
      parts.delete(m.id);
    }
    if (m.type === 'event') events.push(m);
    else if (m.id != null) {
      waiting.get(m.id)?.(m);
      waiting.delete(m.id);
    }
  });
});

afterAll(async () => {
  ws?.close();
  if (serve && !exited) {
    serve.kill('SIGTERM');
    await new Promise((r) => serve.once('exit', r));
  }
  rmSync(home, { recursive: true, force: true });
});

describe('serve with the deepest llama', () => {
  it(
    'answers run.predict and stays up',
    async () => {
      const reply = await call('run.predict', { spec: DEEP_LLAMA });
      expect(exited).toBeNull();
      expect(reply.ok, JSON.stringify(reply.error)).toBe(true);
      expect(reply.result.status).toBe('done');
      expect(reply.result.peak_allocated).toBeGreaterThan(0);
    },
    SLOW,
  );

  it(
    'finishes run.start and stays up',
    async () => {
      expect(exited).toBeNull();
      const started = await call('run.start', { spec: DEEP_LLAMA, name: 'deep llama' });
      expect(started.ok, JSON.stringify(started.error)).toBe(true);
      const runId = started.result.runId;
      const deadline = Date.now() + SLOW - 10_000;
      let end: any;
      while (!end && exited === null && Date.now() < deadline) {
        end = events.find((e) => (e.event === 'run.done' || e.event === 'run.error') && e.data.runId === runId);
        if (!end) await new Promise((r) => setTimeout(r, 50));
      }
      expect(exited).toBeNull();
      expect(end?.event).toBe('run.done');
      expect(end.data.meta.status).toBe('done');
      const list = await call('runs.list');
      expect(list.ok).toBe(true);
      expect(exited).toBeNull();
    },
    SLOW,
  );
});

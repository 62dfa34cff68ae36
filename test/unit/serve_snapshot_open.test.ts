// Opening a large snapshot in `vramlab serve` must not freeze the other clients: the upload's
// read runs in slices with the event loop turning between them (it once ran in one piece,
// and a crafted trace froze every client for 93 s). A real server, two real WebSocket
// clients: the second one's request, sent while the first one's snapshot is being read,
// is answered before that read ends.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { SNAPSHOT_CHUNK_BYTES } from '../../main/contract/snapshot';
import { createHost } from '../../main/host/create';
import type { Host } from '../../main/host/host';
import { rendererDist } from '../../main/paths';
import { writePickle } from '../../main/snapshot/pickle/writer';
import type { PickleValue } from '../../main/snapshot/pickle/values';
import { startServer, type RunningServer } from '../../main/server/server';
import { native } from '../helpers/addon';
import { parseFrame } from '../helpers/frames';

/** n alloc/free pairs, each with its own stack list (PyTorch's layout): a few seconds to read. */
function bigSnapshot(pairs: number): Buffer {
  const frame = new Map<string, PickleValue>([
    ['name', 'step'],
    ['filename', 'train.py'],
    ['line', 3],
  ]);
  const events: PickleValue[] = [];
  for (let i = 0; i < pairs; i++) {
    const frames = [frame, frame];
    const ev = (action: string) =>
      new Map<string, PickleValue>([
        ['action', action],
        ['addr', 2 ** 40 + (i % 64) * 4096],
        ['size', 512],
        ['stream', 0],
        ['time_us', 2 ** 50 + i],
        ['frames', frames],
      ]);
    events.push(ev('alloc'), ev('free_completed'));
  }
  return writePickle(
    new Map<string, PickleValue>([
      ['segments', []],
      ['device_traces', [events]],
    ]),
  );
}

class Client {
  readonly replies = new Map<string, { at: number; msg: { ok: boolean; result?: unknown; error?: { message: string } } }>();
  private seq = 0;
  private waiters = new Map<string, (m: unknown) => void>();
  constructor(readonly ws: WebSocket) {
    ws.on('message', (d) => {
      const m = parseFrame(d);
      if (m.type !== 'response') return;
      this.replies.set(String(m.id), { at: performance.now(), msg: m });
      this.waiters.get(String(m.id))?.(m);
    });
  }
  static async open(url: string): Promise<Client> {
    const ws = new WebSocket(url);
    await new Promise((r) => ws.once('open', r));
    return new Client(ws);
  }
  send(method: string, params?: unknown): { id: string; reply: Promise<any> } {
    const id = `c${++this.seq}`;
    const reply = new Promise((r) => this.waiters.set(id, r));
    this.ws.send(JSON.stringify({ id, method, params }));
    return { id, reply };
  }
}

let dir = '';
let host: Host;
let server: RunningServer;
beforeAll(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'vramlab-serve-open-'));
  host = createHost(native, { home: dir });
  server = await startServer({ host, rendererDir: rendererDist() });
});
afterAll(async () => {
  await server.close();
  host.dispose();
  rmSync(dir, { recursive: true, force: true });
});

describe('serve while a large snapshot opens', () => {
  it("another client's request is answered while the upload's read is still running", { timeout: 60_000 }, async () => {
    const data = bigSnapshot(60_000); // 120,000 events
    const parts: string[] = [];
    for (let at = 0; at < data.length; at += SNAPSHOT_CHUNK_BYTES)
      parts.push(data.subarray(at, at + SNAPSHOT_CHUNK_BYTES).toString('base64'));
    const a = await Client.open(server.wsUrl);
    const b = await Client.open(server.wsUrl);
    const params = (i: number) => ({ uploadId: 'big', index: i, total: parts.length, chunk: parts[i], name: 'big.pickle' });
    for (let i = 0; i < parts.length - 1; i++) expect((await a.send('snapshot.upload', params(i)).reply).ok).toBe(true);

    const opened = a.send('snapshot.upload', params(parts.length - 1));
    // Once the server has the last chunk (the read has begun), the other client asks.
    await new Promise((r) => setTimeout(r, 100));
    const other = b.send('devices.list');
    const [done, answer] = await Promise.all([opened.reply, other.reply]);
    expect(answer.ok).toBe(true);
    expect(done.ok).toBe(true);
    expect(done.result.snapshot.traceLength).toBe(120_000);
    // Answered before the snapshot finished opening (in one piece, it waited for all of it).
    expect(b.replies.get(other.id)!.at).toBeLessThan(a.replies.get(opened.id)!.at);
    a.ws.close();
    b.ws.close();
  });
});

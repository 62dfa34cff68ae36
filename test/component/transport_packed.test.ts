// The page's WebSocket transport reading packed run progress (renderer/src/transport/websocket.ts)
// from a real WebSocket server: valid frames arrive decoded, in order, beside JSON events;
// truncated, corrupt and oversized binary frames are dropped with a clear console error, and
// the connection keeps serving.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { WebSocket as ServerSocket, WebSocketServer as Wss } from 'ws';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import { websocketTransport } from '../../renderer/src/transport/websocket';
import { packProgress } from '../../main/contract/packed_progress';
import { MAX_FRAME_CHARS } from '../../main/contract/messages';
import type { EventMessage } from '../../main/contract';
import { CATEGORIES, type RunProgress } from '../../main/contract/runs';

// jsdom resolves 'ws' to its browser stub: the server side is Node's.
const { WebSocketServer } = createRequire(import.meta.url)('ws') as typeof import('ws');
let wss: Wss;
let url: string;
const connected: Promise<ServerSocket> = new Promise((resolve) => {
  beforeAll(async () => {
    wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
    await new Promise((r) => wss.once('listening', r));
    url = `ws://127.0.0.1:${(wss.address() as AddressInfo).port}/ws`;
    wss.once('connection', resolve);
  });
});
afterAll(async () => {
  for (const c of wss.clients) c.terminate();
  await new Promise<void>((r) => wss.close(() => r()));
});

const batch = (seq: number): RunProgress => {
  const s = { t: seq, allocated: 1024 * (seq + 1), reserved: 2 << 20, active: 1024, requested: 1000, by: CATEGORIES.map(() => 0) };
  return {
    runId: 'live-1',
    samples: [s],
    events: [
      { type: 'alloc', t: seq, action: 'alloc', addr: 4096 * seq, size: 1000, blockSize: 1024, category: 'activations', module: 'fc1' },
    ],
    dropped: 0,
    latest: s,
    phase: 'forward',
    iteration: 0,
    seq,
  };
};

describe('the page reading packed run progress over its WebSocket', () => {
  it('decodes valid frames and drops malformed ones with an error naming why', async () => {
    const errors = vi.spyOn(console, 'error').mockImplementation(() => {});
    const t = websocketTransport(url);
    const got: EventMessage[] = [];
    t.onEvent((m) => got.push(m));
    const server = await connected;
    const good0 = packProgress(batch(0))!;
    const good1 = packProgress(batch(1))!;
    server.send(good0, { binary: true });
    server.send(good1.subarray(0, good1.length - 9), { binary: true }); // truncated
    server.send(Buffer.from('garbage that is not a frame at all'), { binary: true });
    server.send(Buffer.alloc(MAX_FRAME_CHARS + 8), { binary: true }); // over the bound
    server.send(JSON.stringify({ type: 'event', event: 'run.done', data: { runId: 'live-1' } }));
    server.send(packProgress(batch(2))!, { binary: true });
    await vi.waitFor(() => expect(got.length).toBe(3), { timeout: 10_000 });
    expect(got.map((m) => m.event)).toEqual(['run.progress', 'run.done', 'run.progress']);
    expect(got[0].data).toEqual(batch(0));
    expect(got[2].data).toEqual(batch(2));
    const said = errors.mock.calls.map((c) => String(c[0]));
    expect(said).toHaveLength(3);
    expect(said[0]).toMatch(/malformed run\.progress frame: .*do not make/);
    expect(said[1]).toMatch(/malformed run\.progress frame: it does not start with the VLPK magic/);
    expect(said[2]).toMatch(/malformed run\.progress frame: .*more than the 1048576 a frame may have/);
    errors.mockRestore();
  });
});

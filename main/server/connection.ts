// One WebSocket client of `vramlab serve`, kept within bounds:
//  - at most `maxInFlight` requests at once; more are answered "busy" at once;
//  - back-pressure: while the socket holds more than `highWater` unsent bytes, we stop
//    reading its requests (TCP pushes back on the client) and wait before sending more;
//  - replies larger than one frame go out as 'part' frames, written as the socket drains;
//  - a client silent for `idleMs` is closed, one that stops answering pings is dropped;
//  - when it closes, the work it started is cancelled.
import type { WebSocket } from 'ws';
import { MAX_FRAME_CHARS, type Response, type ServerMessage } from '../contract';
import type { Host } from '../host/host';
import type { Client } from '../host/client';
import { jsonPieces } from './json_stream';

export interface ConnectionLimits {
  maxInFlight: number;
  highWater: number;
  idleMs: number;
  pingMs: number;
}

export const DEFAULT_CONNECTION_LIMITS: ConnectionLimits = {
  maxInFlight: 8,
  highWater: 4 << 20,
  idleMs: 15 * 60_000,
  pingMs: 30_000,
};

type Socket = { pause(): void; resume(): void; once(e: 'drain', f: () => void): void };

/** Returns the connection's client: its id routes run events, and its work ends when it closes. */
export function attachConnection(ws: WebSocket, host: Host, limits: ConnectionLimits): Client {
  const socket = (ws as unknown as { _socket: Socket })._socket;
  const client = host.openClient('websocket');
  let inFlight = 0;
  let paused = false;
  let lastSeen = Date.now();
  let alive = true;

  const waitForRoom = () =>
    new Promise<void>((resolve) => {
      const check = () => {
        if (ws.readyState !== ws.OPEN || ws.bufferedAmount <= limits.highWater) resolve();
        else setTimeout(check, 5);
      };
      check();
    });

  /** Stop reading requests while the client is not reading our replies. */
  const throttle = () => {
    if (paused || ws.bufferedAmount <= limits.highWater) return;
    paused = true;
    socket.pause();
    void waitForRoom().then(() => {
      paused = false;
      socket.resume();
    });
  };

  const send = async (reply: Response) => {
    if (ws.readyState !== ws.OPEN) return;
    const head = `{"type":"response","id":${JSON.stringify(reply.id)},"ok":${reply.ok},`;
    const body = reply.ok ? jsonPieces({ result: reply.result ?? null }) : jsonPieces({ error: reply.error });
    // The first frame's worth decides: a small reply goes as one ordinary frame.
    let buf = head;
    let parted = false;
    let first = true;
    try {
      for (const piece of body) {
        buf += first ? piece.slice(1) : piece; // body's own '{' is replaced by head
        first = false;
        if (buf.length >= MAX_FRAME_CHARS) {
          parted = true;
          const part: ServerMessage = { type: 'part', id: reply.id, data: buf, last: false };
          buf = '';
          if (ws.bufferedAmount > limits.highWater) await waitForRoom();
          if (ws.readyState !== ws.OPEN) return;
          ws.send(JSON.stringify(part));
        }
      }
    } catch (err) {
      // Could not serialize (a value no JSON can hold): an error reply, never a crash.
      const message = `the reply could not be sent: ${err instanceof Error ? err.message : String(err)}`;
      if (parted) ws.send(JSON.stringify({ type: 'part', id: reply.id, data: '', last: true }));
      ws.send(JSON.stringify({ type: 'response', id: reply.id, ok: false, error: { code: 'failed', message } }));
      return;
    }
    if (ws.readyState !== ws.OPEN) return;
    if (!parted) ws.send(buf);
    else ws.send(JSON.stringify({ type: 'part', id: reply.id, data: buf, last: true } satisfies ServerMessage));
    throttle();
  };

  ws.on('message', async (data, isBinary) => {
    lastSeen = Date.now();
    if (isBinary) {
      await send({ id: null, ok: false, error: { code: 'bad_request', message: 'binary frames are not accepted; send JSON text' } });
      return;
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(data.toString());
    } catch {
      await send({ id: null, ok: false, error: { code: 'bad_request', message: 'message is not valid JSON' } });
      return;
    }
    if (inFlight >= limits.maxInFlight) {
      const id = (parsed as { id?: unknown })?.id;
      const ok = typeof id === 'number' || (typeof id === 'string' && id.length <= 64);
      await send({
        id: ok ? (id as string | number) : null,
        ok: false,
        error: {
          code: 'unavailable',
          message: `busy: ${limits.maxInFlight} requests already in flight on this connection; wait for a reply`,
        },
      });
      return;
    }
    inFlight++;
    try {
      // A client that is not reading gets no new work started for it: at most one reply
      // waits in memory per congested connection; further requests meet the in-flight limit.
      if (ws.bufferedAmount > limits.highWater) await waitForRoom();
      if (ws.readyState !== ws.OPEN) return;
      await send(await host.handle(parsed, 'websocket', client));
    } finally {
      inFlight--;
      lastSeen = Date.now();
    }
  });

  // Idle and dead peers. A ping every pingMs; three unanswered in a row means the peer is
  // gone (terminate: its unsent data can never be delivered). A client with nothing in
  // flight and no request for idleMs is closed gracefully (close() still flushes replies).
  let missed = 0;
  ws.on('pong', () => (alive = true));
  const timer = setInterval(
    () => {
      missed = alive ? 0 : missed + 1;
      if (missed >= 3) {
        ws.terminate();
        return;
      }
      if (inFlight === 0 && Date.now() - lastSeen > limits.idleMs && ws.readyState === ws.OPEN) {
        ws.close(1001, 'idle');
        return;
      }
      alive = false;
      ws.ping();
    },
    Math.min(limits.pingMs, limits.idleMs),
  );
  timer.unref?.();
  ws.on('close', () => {
    clearInterval(timer);
    // Its runs, predictions, sweeps, fits and fixes stop: nobody is left to read them.
    host.closeClient(client);
  });
  ws.on('error', () => ws.terminate());
  return client;
}

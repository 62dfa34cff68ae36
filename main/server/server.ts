// `vramlab serve`: the built renderer over HTTP and the host's contract over a WebSocket,
// on 127.0.0.1 by default, behind a random token carried in the page URL.
import { createServer, type Server } from 'node:http';
import { WebSocketServer, type WebSocket } from 'ws';
import type { AddressInfo } from 'node:net';
import { MAX_MESSAGE_BYTES, type EventMessage, type ServerMessage } from '../contract';
import { packEvent } from '../contract/packed_progress';
import type { Audience, Host } from '../host/host';
import { newToken, refuseUpgrade, isLoopback } from './auth';
import { serveStatic } from './static';
import { attachConnection, DEFAULT_CONNECTION_LIMITS, type ConnectionLimits } from './connection';

export interface ServerOptions {
  host: Host;
  bind?: string; // interface address, default 127.0.0.1
  port?: number; // 0 = any free port
  token?: string;
  rendererDir: string;
  /** Per-connection bounds (tests shorten the timeouts). */
  limits?: Partial<ConnectionLimits>;
  /** Most WebSocket clients at once; more are refused with 503. */
  maxClients?: number;
}

export interface RunningServer {
  url: string; // page URL with the token
  wsUrl: string;
  token: string;
  port: number;
  /** Connected clients and the most unsent bytes any of them holds (tests, load bench). */
  stats(): { clients: number; maxBuffered: number };
  close(): Promise<void>;
}

/** A client whose socket has this much unsent data gets no more events until it drains. */
const MAX_BUFFERED = 8 << 20;
/** Above this much unsent data, run progress waits and merges (backpressure to the runner). */
const CONGESTED_BUFFERED = 1 << 20;

export async function startServer(opts: ServerOptions): Promise<RunningServer> {
  const bind = opts.bind ?? '127.0.0.1';
  const token = opts.token ?? newToken();
  const http: Server = createServer((req, res) => serveStatic(opts.rendererDir, req, res));
  const wss = new WebSocketServer({ noServer: true, maxPayload: MAX_MESSAGE_BYTES });
  const limits: ConnectionLimits = { ...DEFAULT_CONNECTION_LIMITS, ...opts.limits };
  const maxClients = opts.maxClients ?? 64;
  const clientOf = new WeakMap<WebSocket, string>();

  await new Promise<void>((resolve, reject) => {
    http.once('error', reject);
    http.listen(opts.port ?? 0, bind, () => resolve());
  });
  const port = (http.address() as AddressInfo).port;

  http.on('upgrade', (req, socket, head) => {
    const why = refuseUpgrade(req, token, bind, port);
    if (why) {
      socket.end(`HTTP/1.1 ${why === 'not found' ? '404 Not Found' : '403 Forbidden'}\r\nConnection: close\r\n\r\n${why}`);
      return;
    }
    if (wss.clients.size >= maxClients) {
      socket.end(`HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\n\r\ntoo many clients (${maxClients})`);
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => clientOf.set(ws, attachConnection(ws, opts.host, limits).id));
  });

  // Run events name their audience (the run's subscribers); other events go to everyone.
  // Run progress goes as one binary frame (contract/packed_progress.ts), encoded once for all;
  // a batch too large for one frame goes as JSON text, as every other event does.
  const onEvent = (msg: EventMessage, audience: Audience) => {
    let frame: Uint8Array | string | null = null;
    for (const ws of wss.clients) {
      if (audience && !audience.has(clientOf.get(ws) ?? '')) continue;
      if (ws.readyState !== ws.OPEN || ws.bufferedAmount >= MAX_BUFFERED) continue;
      frame ??= packEvent(msg) ?? JSON.stringify({ type: 'event', ...msg } satisfies ServerMessage);
      ws.send(frame, { binary: typeof frame !== 'string' });
    }
  };
  opts.host.events.on('event', onEvent);
  const removeProbe = opts.host.addCongestionProbe(() => {
    for (const ws of wss.clients) if (ws.bufferedAmount > CONGESTED_BUFFERED) return true;
    return false;
  });

  const shown = isLoopback(bind) ? '127.0.0.1' : bind.includes(':') ? `[${bind}]` : bind;
  return {
    url: `http://${shown}:${port}/?token=${token}`,
    wsUrl: `ws://${shown}:${port}/ws?token=${token}`,
    token,
    port,
    stats: () => ({ clients: wss.clients.size, maxBuffered: Math.max(0, ...[...wss.clients].map((c) => c.bufferedAmount)) }),
    close: async () => {
      opts.host.events.off('event', onEvent);
      removeProbe();
      for (const ws of wss.clients) ws.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}

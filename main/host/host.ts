// The host owns the native addon and answers the contract's methods. Both transports
// (Electron IPC, WebSocket) hand it raw messages; it validates, dispatches, and never throws.
import { EventEmitter } from 'node:events';
import {
  RequestSchema,
  methods,
  type MethodInput,
  type MethodName,
  type MethodResults,
  type Response,
  type EventMessage,
} from '../contract';
import type { NativeAddon } from '../addon/types';
import { describeError, UnavailableError } from './errors';
import { Client } from './client';
import { clipText } from '../contract/echo';

/** A method's handler: its params as the contract's schema outputs them, its result as the contract types it. */
export type Handler<M extends MethodName = MethodName> = (
  params: MethodInput<M>,
  ctx: HostContext,
) => MethodResults[M] | Promise<MethodResults[M]>;

export interface HostContext {
  host: Host;
  transport: 'ipc' | 'websocket';
  /** Who asked: run events of the runs it starts go to it, and its work ends when it goes. */
  client: Client;
}

/** Client ids an event goes to; undefined: every client. */
export type Audience = ReadonlySet<string> | undefined;

export class Host {
  readonly events = new EventEmitter();
  private readonly handlers = new Map<string, (params: unknown, ctx: HostContext) => unknown>();

  constructor(readonly native: NativeAddon) {
    this.events.setMaxListeners(100);
    this.register('app.info', (_p, ctx) => ({
      version: this.native.buildInfo().version,
      cuda: this.native.buildInfo().cuda,
      transport: ctx.transport,
    }));
    this.register('devices.list', () => this.native.listDevices());
  }

  private readonly disposers: Array<() => void> = [];
  private readonly subscribers = new Map<string, Set<string>>();
  private nextClient = 1;
  /** Callers that name no client (tests, in-process use) share this one; it lives as long as the host. */
  private readonly local = new Client('local', 'ipc');

  /** A new client of a transport; close it with closeClient when it goes. */
  openClient(transport: Client['transport']): Client {
    return new Client(`${transport}-${this.nextClient++}`, transport);
  }

  /** Cancels the client's work and drops its subscriptions. */
  closeClient(client: Client): void {
    client.close();
    for (const [topic, ids] of this.subscribers) {
      ids.delete(client.id);
      if (!ids.size) this.subscribers.delete(topic);
    }
  }

  /** `client` receives the events emitted to `topic` (a run id) from now on. */
  subscribe(client: Client, topic: string): void {
    if (client.closed) return;
    let ids = this.subscribers.get(topic);
    if (!ids) this.subscribers.set(topic, (ids = new Set()));
    ids.add(client.id);
  }

  /** The topic is over (the run ended): its subscriptions go. */
  endTopic(topic: string): void {
    this.subscribers.delete(topic);
  }

  /** Emits to the clients subscribed to `topic` only. */
  emitTo(topic: string, event: string, data: unknown): void {
    const ids = this.subscribers.get(topic);
    if (!ids?.size) return;
    const msg: EventMessage = { event, data };
    this.events.emit('event', msg, new Set(ids) as Audience);
  }
  private readonly congestion = new Set<() => boolean>();

  /** A transport reports whether its clients are falling behind; while any is, run progress
   * batches wait and merge instead of piling up in socket buffers. Returns the unregister. */
  addCongestionProbe(probe: () => boolean): () => void {
    this.congestion.add(probe);
    return () => this.congestion.delete(probe);
  }

  isCongested(): boolean {
    for (const probe of this.congestion) if (probe()) return true;
    return false;
  }

  /** Work to undo when the host shuts down (cancel runs, close stores). */
  onDispose(fn: () => void): void {
    this.disposers.push(fn);
  }

  dispose(): void {
    for (const fn of this.disposers.splice(0)) {
      try {
        fn();
      } catch {
        /* shutting down: nothing left to report to */
      }
    }
    this.local.close();
    this.subscribers.clear();
    this.events.removeAllListeners();
  }

  register<M extends MethodName>(method: M, handler: Handler<M>): void {
    this.handlers.set(method, handler as (params: unknown, ctx: HostContext) => unknown);
  }

  /** Emits to every client. */
  emit(event: string, data: unknown): void {
    const msg: EventMessage = { event, data };
    this.events.emit('event', msg, undefined as Audience);
  }

  /** Answers one incoming message. Always resolves; errors become error replies. */
  async handle(raw: unknown, transport: HostContext['transport'], client: Client = this.local): Promise<Response> {
    const parsed = RequestSchema.safeParse(raw);
    if (!parsed.success) {
      const id = idOf(raw);
      return { id, ok: false, error: { code: 'bad_request', message: `malformed request: ${summarize(parsed.error)}` } };
    }
    const { id, method, params } = parsed.data;
    const handler = this.handlers.get(method);
    if (!handler) return { id, ok: false, error: { code: 'unknown_method', message: `unknown method "${method}"` } };
    const schema = (methods as Record<string, { params: import('zod').ZodType } | undefined>)[method as MethodName]?.params;
    let checked: unknown = params;
    if (schema) {
      const res = schema.safeParse(params);
      if (!res.success) return { id, ok: false, error: { code: 'invalid_params', message: `${method}: ${summarize(res.error)}` } };
      checked = res.data;
    }
    try {
      return { id, ok: true, result: await handler(checked, { host: this, transport, client }) };
    } catch (err) {
      return { id, ok: false, error: { code: err instanceof UnavailableError ? 'unavailable' : 'failed', message: describeError(err) } };
    }
  }
}

function idOf(raw: unknown): string | number | null {
  if (raw && typeof raw === 'object' && 'id' in raw) {
    const id = (raw as { id: unknown }).id;
    if ((typeof id === 'number' && Number.isInteger(id) && id >= 0) || (typeof id === 'string' && id.length <= 64)) return id;
  }
  return null;
}

function summarize(error: import('zod').ZodError): string {
  // zod's own messages list every unknown key: clip each, however many a client sent.
  return error.issues
    .slice(0, 3)
    .map((i) => clipText(`${i.path.length ? clipText(i.path.join('.'), 80) : '(message)'}: ${i.message}`, 400))
    .join('; ');
}

// The renderer talks to the host through this one interface; Electron IPC and WebSocket
// implement it. Calls are typed by the shared contract.
import type { EventMessage, MethodName, MethodParams, MethodResults, Response } from '$contract';

export type ConnectionState = 'connecting' | 'open' | 'closed';

export interface Transport {
  readonly kind: 'ipc' | 'websocket';
  /** Sends one raw message and resolves with the host's response (never rejects on host errors). */
  send(message: unknown): Promise<Response>;
  onEvent(listener: (msg: EventMessage) => void): () => void;
  onState(listener: (state: ConnectionState) => void): () => void;
}

export class HostError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

let nextId = 1;

/** A typed call: resolves with the result or throws HostError with the host's message. */
export async function call<M extends MethodName>(t: Transport, method: M, params?: MethodParams<M>): Promise<MethodResults[M]> {
  const res = await t.send({ id: nextId++, method, params });
  if (!res.ok) throw new HostError(res.error.code, res.error.message);
  return res.result as MethodResults[M];
}

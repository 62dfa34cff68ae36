// Electron: the preload script's contextBridge API.
import type { EventMessage, Response } from '$contract';
import type { ConnectionState, Transport } from './transport';

export interface PreloadApi {
  request(message: unknown): Promise<Response>;
  onEvent(listener: (msg: unknown) => void): () => void;
}

export function ipcTransport(api: PreloadApi): Transport {
  return {
    kind: 'ipc',
    send: (message) => api.request(message),
    onEvent: (listener) => api.onEvent((msg) => listener(msg as EventMessage)),
    onState: (listener: (s: ConnectionState) => void) => {
      listener('open');
      return () => {};
    },
  };
}

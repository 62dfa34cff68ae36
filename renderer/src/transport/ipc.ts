// Electron: the preload script's contextBridge API.
import type { EventMessage, Response } from '$contract';
import { isPacked, unpackEvent } from '$contract/packed_progress';
import type { ConnectionState, Transport } from './transport';
import { reportBadFrame } from './bad_frame';

export interface PreloadApi {
  request(message: unknown): Promise<Response>;
  onEvent(listener: (msg: unknown) => void): () => void;
}

export function ipcTransport(api: PreloadApi): Transport {
  return {
    kind: 'ipc',
    send: (message) => api.request(message),
    // Run progress comes packed, as over the WebSocket (decoded once here, malformed ones refused).
    onEvent: (listener) =>
      api.onEvent((msg) => {
        if (!isPacked(msg)) return listener(msg as EventMessage);
        let event: EventMessage;
        try {
          event = unpackEvent(msg);
        } catch (err) {
          return reportBadFrame(err);
        }
        listener(event);
      }),
    onState: (listener: (s: ConnectionState) => void) => {
      listener('open');
      return () => {};
    },
  };
}

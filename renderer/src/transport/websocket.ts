// Browser against `vramlab serve`: one WebSocket, requests matched to responses by id,
// reconnecting with backoff when the connection drops.
import type { EventMessage, Response, ServerMessage } from '$contract';
import { isPacked, unpackEvent } from '$contract/packed_progress';
import type { ConnectionState, Transport } from './transport';
import { reportBadFrame } from './bad_frame';

export function websocketTransport(url: string): Transport {
  let ws: WebSocket | undefined;
  let state: ConnectionState = 'connecting';
  let retry = 250;
  const pending = new Map<string | number, (r: Response) => void>();
  const queue: string[] = [];
  const parts = new Map<string | number, string[]>();
  const eventListeners = new Set<(m: EventMessage) => void>();
  const stateListeners = new Set<(s: ConnectionState) => void>();

  const setState = (s: ConnectionState) => {
    state = s;
    for (const l of stateListeners) l(s);
  };

  const open = () => {
    setState('connecting');
    ws = new WebSocket(url);
    ws.binaryType = 'arraybuffer';
    ws.onopen = () => {
      retry = 250;
      setState('open');
      for (const m of queue.splice(0)) ws!.send(m);
    };
    ws.onmessage = (e) => {
      // Run progress comes packed: decoded once here, refused whole when malformed (the run's
      // numbered batches then show a gap, and the stored run is shown at its end).
      if (isPacked(e.data)) {
        let event: EventMessage;
        try {
          event = unpackEvent(e.data);
        } catch (err) {
          return reportBadFrame(err);
        }
        for (const l of eventListeners) l(event);
        return;
      }
      let msg: ServerMessage;
      try {
        msg = JSON.parse(String(e.data));
      } catch {
        return;
      }
      // A large reply arrives as 'part' frames; their joined text is the response frame.
      if (msg.type === 'part') {
        const key = msg.id ?? '';
        const got = (parts.get(key) ?? []).concat(msg.data);
        if (!msg.last) return void parts.set(key, got);
        parts.delete(key);
        try {
          msg = JSON.parse(got.join('')) as ServerMessage;
        } catch {
          return; // cut short by the server; its error response follows
        }
      }
      if (msg.type === 'part') return;
      if (msg.type === 'event') for (const l of eventListeners) l(msg);
      else if (msg.id !== null && pending.has(msg.id)) {
        pending.get(msg.id)!(msg);
        pending.delete(msg.id);
      }
    };
    ws.onclose = () => {
      setState('closed');
      // Requests in flight on a dead socket get an error instead of hanging forever.
      parts.clear();
      for (const [id, resolve] of pending)
        resolve({ id, ok: false, error: { code: 'unavailable', message: 'lost the connection to vramlab serve' } });
      pending.clear();
      setTimeout(open, retry);
      retry = Math.min(retry * 2, 5000);
    };
  };
  open();

  return {
    kind: 'websocket',
    send(message) {
      const id = (message as { id?: string | number }).id ?? null;
      return new Promise<Response>((resolve) => {
        if (id !== null) pending.set(id, resolve);
        const text = JSON.stringify(message);
        if (ws && ws.readyState === WebSocket.OPEN) ws.send(text);
        else queue.push(text);
        if (id === null) resolve({ id: null, ok: true, result: undefined });
      });
    },
    onEvent(listener) {
      eventListeners.add(listener);
      return () => eventListeners.delete(listener);
    },
    onState(listener) {
      stateListeners.add(listener);
      listener(state);
      return () => stateListeners.delete(listener);
    },
  };
}

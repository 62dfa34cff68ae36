// Picks the transport: the preload API inside Electron, otherwise the WebSocket back to the
// server that served this page (token from the page URL).
import { ipcTransport, type PreloadApi } from './ipc';
import type { Transport } from './transport';
import { websocketTransport } from './websocket';

export function connect(): Transport {
  const api = (window as unknown as { vramlab?: PreloadApi }).vramlab;
  if (api) return ipcTransport(api);
  const token = new URLSearchParams(location.search).get('token') ?? '';
  const scheme = location.protocol === 'https:' ? 'wss' : 'ws';
  return websocketTransport(`${scheme}://${location.host}/ws?token=${encodeURIComponent(token)}`);
}

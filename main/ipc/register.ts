// Wires the host to Electron IPC: requests go through ipcMain.handle (validated by the
// host), run events go to the window that started the run, other events to every window.
import { ipcMain, BrowserWindow, type IpcMainInvokeEvent, type WebContents } from 'electron';
import { MAX_MESSAGE_BYTES, type EventMessage } from '../contract';
import type { Audience, Host } from '../host/host';
import type { Client } from '../host/client';
import { packEvent } from '../contract/packed_progress';
import { CHANNEL_EVENT, CHANNEL_REQUEST } from './channels';

export function registerIpc(host: Host, isTrustedSender: (e: IpcMainInvokeEvent) => boolean): () => void {
  // One client per window's webContents: its run events reach it alone, its work ends with it.
  const clients = new Map<number, Client>();
  const clientFor = (contents: WebContents): Client => {
    let c = clients.get(contents.id);
    if (!c) {
      const id = contents.id;
      clients.set(id, (c = host.openClient('ipc')));
      contents.once('destroyed', () => {
        host.closeClient(clients.get(id)!);
        clients.delete(id);
      });
    }
    return c;
  };
  ipcMain.handle(CHANNEL_REQUEST, async (event, raw: unknown) => {
    if (!isTrustedSender(event)) return { id: null, ok: false, error: { code: 'bad_request', message: 'request from an untrusted frame' } };
    if (JSON.stringify(raw ?? null).length > MAX_MESSAGE_BYTES)
      return { id: null, ok: false, error: { code: 'bad_request', message: 'message too large' } };
    return host.handle(raw, 'ipc', clientFor(event.sender));
  });
  // Run progress goes packed (contract/packed_progress.ts), the frame the WebSocket sends:
  // a Uint8Array crosses IPC as bytes, where an object of 4096 events is cloned field by field.
  const onEvent = (msg: EventMessage, audience: Audience) => {
    let payload: Uint8Array | EventMessage | null = null;
    for (const win of BrowserWindow.getAllWindows()) {
      if (win.isDestroyed() || win.webContents.isDestroyed()) continue;
      if (audience && !audience.has(clients.get(win.webContents.id)?.id ?? '')) continue;
      payload ??= packEvent(msg) ?? msg;
      win.webContents.send(CHANNEL_EVENT, payload);
    }
  };
  host.events.on('event', onEvent);
  return () => {
    ipcMain.removeHandler(CHANNEL_REQUEST);
    host.events.off('event', onEvent);
    for (const c of clients.values()) host.closeClient(c);
    clients.clear();
  };
}

// Wires the host to Electron IPC: requests go through ipcMain.handle (validated by the
// host), events fan out to every window's webContents.
import { ipcMain, BrowserWindow, type IpcMainInvokeEvent } from 'electron';
import { MAX_MESSAGE_BYTES, type EventMessage } from '../contract';
import type { Host } from '../host/host';
import { CHANNEL_EVENT, CHANNEL_REQUEST } from './channels';

export function registerIpc(host: Host, isTrustedSender: (e: IpcMainInvokeEvent) => boolean): () => void {
  ipcMain.handle(CHANNEL_REQUEST, async (event, raw: unknown) => {
    if (!isTrustedSender(event)) return { id: null, ok: false, error: { code: 'bad_request', message: 'request from an untrusted frame' } };
    if (JSON.stringify(raw ?? null).length > MAX_MESSAGE_BYTES)
      return { id: null, ok: false, error: { code: 'bad_request', message: 'message too large' } };
    return host.handle(raw, 'ipc');
  });
  const onEvent = (msg: EventMessage) => {
    for (const win of BrowserWindow.getAllWindows())
      if (!win.isDestroyed() && !win.webContents.isDestroyed()) win.webContents.send(CHANNEL_EVENT, msg);
  };
  host.events.on('event', onEvent);
  return () => {
    ipcMain.removeHandler(CHANNEL_REQUEST);
    host.events.off('event', onEvent);
  };
}

// The only bridge between the sandboxed page and the main process: two functions, no Node.
import { contextBridge, ipcRenderer, type IpcRendererEvent } from 'electron';
import { CHANNEL_EVENT, CHANNEL_REQUEST } from '../ipc/channels';
import { MAX_FRAME_CHARS } from '../contract/frame_limits';

contextBridge.exposeInMainWorld('vramlab', {
  request: (message: unknown) => ipcRenderer.invoke(CHANNEL_REQUEST, message),
  onEvent: (listener: (msg: unknown) => void) => {
    // Events are JSON-shaped objects or packed run progress (bytes, within the frame bound; the
    // page decodes and checks them): anything else is not passed on.
    const wrapped = (_e: IpcRendererEvent, msg: unknown) => {
      if (msg instanceof Uint8Array ? msg.byteLength <= MAX_FRAME_CHARS : typeof msg === 'object' && msg !== null) listener(msg);
    };
    ipcRenderer.on(CHANNEL_EVENT, wrapped);
    return () => ipcRenderer.off(CHANNEL_EVENT, wrapped);
  },
});

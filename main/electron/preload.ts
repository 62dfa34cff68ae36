// The only bridge between the sandboxed page and the main process: two functions, no Node.
import { contextBridge, ipcRenderer, type IpcRendererEvent } from 'electron';
import { CHANNEL_EVENT, CHANNEL_REQUEST } from '../ipc/channels';

contextBridge.exposeInMainWorld('vramlab', {
  request: (message: unknown) => ipcRenderer.invoke(CHANNEL_REQUEST, message),
  onEvent: (listener: (msg: unknown) => void) => {
    const wrapped = (_e: IpcRendererEvent, msg: unknown) => listener(msg);
    ipcRenderer.on(CHANNEL_EVENT, wrapped);
    return () => ipcRenderer.off(CHANNEL_EVENT, wrapped);
  },
});

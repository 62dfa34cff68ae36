// Electron main process: owns the native engine (through the host), opens the window,
// wires IPC. Everything behind the host also runs headless (CLI, serve).
import { app, BrowserWindow, dialog } from 'electron';
import path from 'node:path';
import { loadAddon } from '../addon/load';
import { createHost } from '../host/create';
import { registerIpc } from '../ipc/register';
import type { Host } from '../host/host';
import { applyCsp, createWindow } from './window';
import { installMenu } from './menu';
import { isRendererUrl, rendererHref } from './trust';

const rendererIndex = path.join(__dirname, '..', 'renderer', 'index.html');
const preload = path.join(__dirname, 'preload.cjs');

let host: Host | undefined;

app.enableSandbox();

app.whenReady().then(() => {
  try {
    host = createHost(loadAddon(), { home: app.getPath('userData') });
  } catch (err) {
    dialog.showErrorBox('vramlab could not start', err instanceof Error ? err.message : String(err));
    app.exit(1);
    return;
  }
  applyCsp();
  installMenu();
  const indexHref = rendererHref(path.resolve(rendererIndex));
  registerIpc(host, (e) => e.senderFrame?.parent === null && isRendererUrl(e.senderFrame?.url, indexHref));
  createWindow(rendererIndex, preload);
  app.on('activate', () => {
    if (BrowserWindow.getAllWindows().length === 0) createWindow(rendererIndex, preload);
  });
});

app.on('window-all-closed', () => {
  if (process.platform !== 'darwin') app.quit();
});

app.on('will-quit', () => host?.dispose());

app.on('web-contents-created', (_e, contents) => {
  contents.on('will-attach-webview', (e) => e.preventDefault());
});

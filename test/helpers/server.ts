// A real `vramlab serve` in this process: real addon, real host, real HTTP + WebSocket.
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createHost } from '../../main/host/create';
import { rendererDist } from '../../main/paths';
import { startServer, type RunningServer } from '../../main/server/server';
import type { Host } from '../../main/host/host';
import { native } from './addon';

export async function startTestServer(home?: string): Promise<RunningServer & { host: Host }> {
  const rendererDir = rendererDist();
  if (!existsSync(path.join(rendererDir, 'index.html'))) throw new Error('renderer not built: run `npm run build:renderer`');
  // Never the user's ~/.vramlab: each server gets its own run store unless a test names one.
  const host = createHost(native, { home: home ?? mkdtempSync(path.join(tmpdir(), 'vramlab-e2e-')) });
  const server = await startServer({ host, rendererDir });
  return {
    ...server,
    host,
    close: async () => {
      await server.close();
      host.dispose();
    },
  };
}

// A real host (native addon, run store in a temp folder) behind the renderer's Transport,
// in process: component tests drive screens against the host they run on in the app.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createHost } from '../../main/host/create';
import { loadAddon } from '../../main/addon/load';
import type { Host } from '../../main/host/host';
import type { EventMessage } from '../../main/contract';
import { packEvent, unpackEvent } from '../../main/contract/packed_progress';
import type { Transport } from '../../renderer/src/transport/transport';

export interface HostTransport {
  host: Host;
  transport: Transport;
  close(): void;
}

export function hostTransport(prefix = 'vramlab-host-'): HostTransport {
  const home = mkdtempSync(path.join(os.tmpdir(), prefix));
  const host = createHost(loadAddon(), { home });
  const transport: Transport = {
    kind: 'websocket',
    send: (m) => host.handle(m, 'websocket'),
    onEvent: (l) => {
      // Run progress crosses as the transports carry it: packed, then decoded as the page does.
      const f = (m: EventMessage) => {
        const packed = packEvent(m);
        l(packed ? unpackEvent(packed) : m);
      };
      host.events.on('event', f);
      return () => host.events.off('event', f);
    },
    onState: (l) => {
      l('open');
      return () => {};
    },
  };
  return {
    host,
    transport,
    close: () => {
      host.dispose();
      rmSync(home, { recursive: true, force: true });
    },
  };
}

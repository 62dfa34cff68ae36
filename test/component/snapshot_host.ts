// What the Snapshots screen's component tests share: the jsdom shims the chart needs (no
// layout, no media queries, no canvas) and a real host in this process (the real addon
// and snapshot reader) reached by a direct call, as Electron IPC would reach it.
import { afterAll, afterEach, beforeAll } from 'vitest';
import { cleanup } from '@testing-library/svelte';
import type { Transport } from '../../renderer/src/transport/transport';
import { Host } from '../../main/host/host';
import { registerSnapshotMethods } from '../../main/host/snapshot_methods';
import { loadAddon } from '../../main/addon/load';

/** Call at a test file's top level: installs the shims and the host's lifecycle hooks. */
export function snapshotHostTransport(): Transport {
  (globalThis as any).ResizeObserver ??= class {
    observe() {}
    disconnect() {}
  };
  (window as any).matchMedia ??= () => ({ addEventListener() {}, removeEventListener() {}, matches: false });
  HTMLCanvasElement.prototype.getContext = (() => null) as never;

  let host: Host;
  beforeAll(() => {
    const native = loadAddon();
    host = new Host(native);
    registerSnapshotMethods(host, native);
  });
  afterAll(() => host.dispose());
  afterEach(() => cleanup());
  return {
    kind: 'ipc',
    send: (m) => host.handle(JSON.parse(JSON.stringify(m)), 'ipc'),
    onEvent: () => () => {},
    onState: () => () => {},
  };
}

// Builds the host with every area's methods registered: the one place that knows them all.
import type { NativeAddon } from '../addon/types';
import { Host } from './host';
import { registerRunMethods } from '../runner/methods';
import { registerSnapshotMethods } from './snapshot_methods';
import { registerPlaygroundMethods } from './playground_methods';
import { defaultHome } from '../paths';

export interface HostOptions {
  /** The run store's folder (Electron: userData; CLI and serve: ~/.vramlab or VRAMLAB_HOME). */
  home?: string;
}

export function createHost(native: NativeAddon, options: HostOptions = {}): Host {
  const host = new Host(native);
  registerRunMethods(host, native, { home: options.home ?? defaultHome(), ready: () => !host.isCongested() });
  registerSnapshotMethods(host, native);
  registerPlaygroundMethods(host, native);
  return host;
}

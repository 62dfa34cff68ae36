// Builds the host with every area's methods registered: the one place that knows them all.
import type { NativeAddon } from '../addon/types';
import { Host } from './host';

export interface HostOptions {
  /** The run store's folder (Electron: userData; CLI and serve: ~/.vramlab or VRAMLAB_HOME). */
  home?: string;
}

export function createHost(native: NativeAddon, _options: HostOptions = {}): Host {
  const host = new Host(native);
  return host;
}

// A device's capacity in bytes, from the addon's device list ("sim:custom:24GiB" parsed here).
import type { NativeAddon } from '../addon/types';
import { parseSize } from '../contract/spec';

export function deviceTotal(native: NativeAddon, id: string): number {
  const custom = /^sim:custom:(.+)$/.exec(id);
  if (custom) return parseSize(custom[1]) ?? 0;
  return native.listDevices().find((d) => d.id === id)?.total ?? 0;
}

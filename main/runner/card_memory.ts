// A device's whole card: its total and the bytes its CUDA context and libraries hold outside
// the allocator, from the addon's device list ("sim:custom:SIZE[@MODEL]": SIZE, no context).
import type { NativeAddon } from '../addon/types';
import type { CardMemory } from '../contract/card';
import { parseSize } from '../contract/spec';

export function cardMemory(native: NativeAddon, id: string): CardMemory {
  const custom = /^sim:custom:([^@]+)/.exec(id);
  if (custom) return { total: parseSize(custom[1]) ?? 0, context: 0 };
  const d = native.listDevices().find((x) => x.id === id);
  return { total: d?.total ?? 0, context: d?.context ?? 0 };
}

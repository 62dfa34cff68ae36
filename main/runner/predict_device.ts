// The simulated twin of a device, where predictions and remedies run.
import type { NativeAddon } from '../addon/types';

/** Itself for sim:*; for cuda:N a device whose allocator gets what the card leaves beside its
 *  context (a sim:custom size has no context of its own). */
export function simDevice(native: NativeAddon, device: string): string {
  if (!device.startsWith('cuda:')) return device;
  const d = native.listDevices().find((x) => x.id === device);
  if (!d?.total) throw new Error(`no CUDA device ${device} here to predict for (see 'vramlab devices')`);
  return `sim:custom:${d.total - d.context}`;
}

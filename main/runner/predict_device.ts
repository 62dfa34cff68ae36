// The simulated twin of a device, where predictions and remedies run, and the GPU model it keeps:
// the engine takes kernel facts (cuBLAS workspace, SM count, compute capability) from the
// device's name, so a twin of another size must still be named after the card
// ("sim:custom:SIZE@MODEL", native/device/device_registry.cpp).
import type { NativeAddon } from '../addon/types';
import type { DeviceInfo } from '../contract/devices';

const SIMULATED = ' (simulated)';

/** The preset whose GPU a card is ("NVIDIA H100 80GB HBM3" is the "NVIDIA H100 80GB" preset's);
 *  null when none is named so. */
export function presetForCard(card: string, devices: DeviceInfo[]): string | null {
  for (const d of devices) {
    if (d.kind !== 'sim' || !d.name.endsWith(SIMULATED)) continue;
    const gpu = d.name.slice(0, -SIMULATED.length);
    if (card === gpu || card.startsWith(`${gpu} `)) return d.id.slice('sim:'.length);
  }
  return null;
}

/** The MODEL a device's twins keep: its preset, a card's matching preset (else the card itself,
 *  "cuda:N"), the model a sim:custom device names; null for a generic sim:custom size. */
export function deviceModel(native: NativeAddon, device: string): string | null {
  const custom = /^sim:custom:[^@]*(?:@(.+))?$/.exec(device);
  if (custom) return custom[1] ?? null;
  if (device.startsWith('sim:')) return device.slice('sim:'.length);
  const devices = native.listDevices();
  const d = devices.find((x) => x.id === device);
  if (!d?.total) throw new Error(`no CUDA device ${device} here to predict for (see 'vramlab devices')`);
  return presetForCard(d.name, devices) ?? device;
}

/** A simulated device of `bytes` with `device`'s GPU model. */
export function twinDevice(native: NativeAddon, device: string, bytes: number): string {
  const model = deviceModel(native, device);
  return model ? `sim:custom:${bytes}@${model}` : `sim:custom:${bytes}`;
}

/** Itself for sim:*; for cuda:N a device of the card's model whose allocator gets what the card
 *  leaves beside its context (a sim:custom size has no context of its own). */
export function simDevice(native: NativeAddon, device: string): string {
  if (!device.startsWith('cuda:')) return device;
  const d = native.listDevices().find((x) => x.id === device);
  if (!d?.total) throw new Error(`no CUDA device ${device} here to predict for (see 'vramlab devices')`);
  return twinDevice(native, device, d.total - d.context);
}

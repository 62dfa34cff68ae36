// Sizes in human units (the contract's formatBytes: base 1024, PyTorch's KiB/MiB/GiB) with
// exact bytes for tooltips.
import { formatBytes } from '$contract/units';

export { formatBytes };

export function exactBytes(bytes: number): string {
  return `${bytes.toLocaleString('en-US')} bytes`;
}

/** Axis labels: "64 MiB", "2.5 GiB" (no trailing zeros). */
export function formatBytesShort(bytes: number): string {
  const [num, unit] = formatBytes(bytes, 2).split(' ');
  return `${parseFloat(num)} ${unit}`;
}

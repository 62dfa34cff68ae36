// Sizes in human units (base 1024, PyTorch's KiB/MiB/GiB) with exact bytes for tooltips.
const UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];

export function formatBytes(bytes: number, digits = 2): string {
  let v = Math.abs(bytes);
  let i = 0;
  while (v >= 1024 && i < UNITS.length - 1) {
    v /= 1024;
    i++;
  }
  return `${bytes < 0 ? '-' : ''}${i === 0 ? v.toFixed(0) : v.toFixed(digits)} ${UNITS[i]}`;
}

export function exactBytes(bytes: number): string {
  return `${bytes.toLocaleString('en-US')} bytes`;
}

/** Axis labels: "64 MiB", "2.5 GiB" (no trailing zeros). */
export function formatBytesShort(bytes: number): string {
  const [num, unit] = formatBytes(bytes, 2).split(' ');
  return `${parseFloat(num)} ${unit}`;
}

// Byte sizes, both ways, for every side of the lab: "20GiB" → bytes (the spec, the CLI,
// the forms) and bytes → "20.00 GiB" (PyTorch's base-1024 units).
const UNITS: Record<string, number> = {
  b: 1,
  kb: 1e3,
  mb: 1e6,
  gb: 1e9,
  tb: 1e12,
  kib: 2 ** 10,
  mib: 2 ** 20,
  gib: 2 ** 30,
  tib: 2 ** 40,
};

/** "20GiB", "1.5 GB", "512MiB", "1048576" → bytes; null when the unit is unknown. */
export function parseSize(text: string): number | null {
  const m = /^\s*([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]*)\s*$/.exec(text);
  if (!m) return null;
  const unit = (m[2] || 'b').toLowerCase();
  const mult = UNITS[unit];
  if (mult === undefined) return null;
  return Number(m[1]) * mult;
}

const NAMES = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];

/** Bytes the way PyTorch prints them: "1.50 GiB" (base 1024). */
export function formatBytes(bytes: number, digits = 2): string {
  let v = Math.abs(bytes);
  let i = 0;
  while (v >= 1024 && i < NAMES.length - 1) {
    v /= 1024;
    i++;
  }
  return `${bytes < 0 ? '-' : ''}${i === 0 ? v.toFixed(0) : v.toFixed(digits)} ${NAMES[i]}`;
}

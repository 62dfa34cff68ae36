// Byte sizes as people type them: "24GiB" (binary), "24GB" (decimal, as SI defines it),
// "512MiB", "1.5TiB", or plain bytes "25769803776".
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

export function parseSize(text: string): number {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$/.exec(text);
  if (!m) throw new Error(`bad size "${text}": expected a number with an optional unit (B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)`);
  const unit = m[2].toLowerCase() || 'b';
  const mult = UNITS[unit];
  if (mult === undefined) throw new Error(`bad size "${text}": unknown unit "${m[2]}" (use B, KB, MB, GB, TB, KiB, MiB, GiB or TiB)`);
  const bytes = Math.floor(Number(m[1]) * mult);
  if (!Number.isSafeInteger(bytes)) throw new Error(`bad size "${text}": too large`);
  return bytes;
}

// Terminal output: byte sizes (the contract's formatBytes) and plain text tables.
export { formatBytes } from '../contract/units';

/** A plain text table: columns padded to their widest cell; numbers right-aligned. */
export function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, c) => Math.max(h.length, ...rows.map((r) => (r[c] ?? '').length)));
  const line = (cells: string[]) =>
    cells.map((cell, c) => (/^[\d.,\s]+[A-Za-z]*$/.test(cell) ? cell.padStart(widths[c]) : cell.padEnd(widths[c]))).join('  ');
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n') + '\n';
}

// RFC 4180 CSV: comma separated, CRLF line ends, fields quoted when they hold a comma,
// quote, CR or LF (quotes doubled). Readable by pandas.read_csv and spreadsheets.
export type Cell = string | number | boolean | null | undefined;

export function csvField(v: Cell): string {
  if (v === null || v === undefined) return '';
  if (typeof v === 'number') return Number.isFinite(v) ? String(v) : '';
  const s = String(v);
  return /[",\r\n]/.test(s) || /^\s|\s$/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

export function csvRow(cells: readonly Cell[]): string {
  return cells.map(csvField).join(',') + '\r\n';
}

export function toCsv(header: readonly string[], rows: Iterable<readonly Cell[]>): string {
  const parts = [csvRow(header)];
  for (const r of rows) parts.push(csvRow(r));
  return parts.join('');
}

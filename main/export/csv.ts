// RFC 4180 CSV: comma separated, CRLF line ends, fields quoted when they hold a comma,
// quote, CR or LF (quotes doubled). Readable by pandas.read_csv and spreadsheets.
//
// Text cells are neutralized against CSV injection as OWASP recommends: a cell whose
// first character is = + - @ TAB or CR would be read as a formula by Excel/LibreOffice/
// Sheets, so it gets a leading apostrophe (shown as text, never evaluated); and bidi
// control characters (which can reorder what a person sees in a cell) are removed.
// Numbers are written as numbers, so negative values stay numeric.
export type Cell = string | number | boolean | null | undefined;

/** Characters that start a formula in a spreadsheet. */
const FORMULA_START = /^[=+\-@\t\r]/;
/** Bidirectional overrides, embeddings, isolates and marks (Trojan-Source class). */
const BIDI = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

export function csvText(s: string): string {
  const clean = s.replace(BIDI, '');
  return FORMULA_START.test(clean) ? `'${clean}` : clean;
}

export function csvField(v: Cell): string {
  if (v === null || v === undefined) return '';
  if (typeof v === 'number') return Number.isFinite(v) ? String(v) : '';
  const s = typeof v === 'string' ? csvText(v) : String(v);
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

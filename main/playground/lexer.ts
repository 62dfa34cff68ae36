// Splits one playground line into tokens: the small piece of Python the playground reads
// (names, numbers, strings, brackets, operators). Nothing is ever evaluated as code.
export type TokenKind = 'name' | 'number' | 'string' | 'op' | 'end';

export interface Token {
  kind: TokenKind;
  text: string;
  /** Column (0-based) where the token starts, for error messages. */
  col: number;
  /** Numbers: the value, and whether Python would read it as an int. */
  value?: number;
  isInt?: boolean;
}

export class PlaygroundSyntaxError extends Error {
  constructor(
    message: string,
    readonly col: number,
  ) {
    super(message);
    this.name = 'SyntaxError';
  }
}

// Longest first, so "**" wins over "*" and "//" over "/".
const OPERATORS = ['**', '//', '==', '(', ')', '[', ']', ',', '.', '=', '@', '*', '/', '+', '-', '%', ';', ':'];
const MAX_TOKENS = 1000;

export function tokenize(line: string): Token[] {
  const out: Token[] = [];
  let i = 0;
  while (i < line.length) {
    const c = line[i];
    if (c === ' ' || c === '\t') {
      i++;
      continue;
    }
    if (c === '#') break; // a comment runs to the end of the line
    if (out.length >= MAX_TOKENS) throw new PlaygroundSyntaxError(`line too long (over ${MAX_TOKENS} tokens)`, i);
    const start = i;
    if (/[A-Za-z_]/.test(c)) {
      while (i < line.length && /[A-Za-z0-9_]/.test(line[i])) i++;
      out.push({ kind: 'name', text: line.slice(start, i), col: start });
      continue;
    }
    if (/[0-9]/.test(c) || (c === '.' && /[0-9]/.test(line[i + 1] ?? ''))) {
      const m = /^(?:0[xX][0-9a-fA-F_]+|(?:[0-9][0-9_]*)?(?:\.[0-9_]*)?(?:[eE][+-]?[0-9_]+)?)/.exec(line.slice(i));
      const text = m ? m[0] : '';
      i += text.length;
      if (/[A-Za-z_]/.test(line[i] ?? '')) throw new PlaygroundSyntaxError(`invalid number "${line.slice(start, i + 1)}"`, start);
      const clean = text.replace(/_/g, '');
      const isHex = /^0[xX]/.test(clean);
      const isInt = isHex || /^[0-9]+$/.test(clean);
      const value = isHex ? parseInt(clean.slice(2), 16) : Number(clean);
      if (!Number.isFinite(value)) throw new PlaygroundSyntaxError(`invalid number "${text}"`, start);
      out.push({ kind: 'number', text, col: start, value, isInt });
      continue;
    }
    if (c === '"' || c === "'") {
      let j = i + 1;
      let s = '';
      while (j < line.length && line[j] !== c) {
        if (line[j] === '\\') throw new PlaygroundSyntaxError('escapes in strings are not supported here', j);
        s += line[j++];
      }
      if (j >= line.length) throw new PlaygroundSyntaxError('unterminated string literal', start);
      i = j + 1;
      out.push({ kind: 'string', text: s, col: start });
      continue;
    }
    const op = OPERATORS.find((o) => line.startsWith(o, i));
    if (!op) throw new PlaygroundSyntaxError(`invalid character '${c}'`, i);
    out.push({ kind: 'op', text: op, col: i });
    i += op.length;
  }
  out.push({ kind: 'end', text: '', col: line.length });
  return out;
}

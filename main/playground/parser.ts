// Parses one playground line into statements: a recursive-descent parser for a small,
// safe subset of Python (assignment, del, calls, methods, attributes, @ and integer
// arithmetic). It builds a tree; main/host/playground_session.ts runs it. No eval.
import { PlaygroundSyntaxError, tokenize, type Token } from './lexer';

export type Expr =
  | { kind: 'name'; name: string; col: number }
  | { kind: 'number'; value: number; isInt: boolean; col: number }
  | { kind: 'string'; value: string; col: number }
  | { kind: 'tuple'; items: Expr[]; list: boolean; col: number }
  | { kind: 'attr'; target: Expr; name: string; col: number }
  | { kind: 'call'; fn: Expr; args: Expr[]; kwargs: Array<{ name: string; value: Expr }>; col: number }
  | { kind: 'binary'; op: '@' | '*' | '/' | '//' | '%' | '+' | '-' | '**'; left: Expr; right: Expr; col: number }
  | { kind: 'unary'; op: '-' | '+'; operand: Expr; col: number };

export type Statement = { kind: 'assign'; targets: string[]; expr: Expr } | { kind: 'del'; names: string[] } | { kind: 'expr'; expr: Expr };

const MAX_DEPTH = 64;
const KEYWORDS = new Set([
  'and',
  'as',
  'assert',
  'async',
  'await',
  'break',
  'class',
  'continue',
  'def',
  'del',
  'elif',
  'else',
  'except',
  'finally',
  'for',
  'from',
  'global',
  'if',
  'import',
  'in',
  'is',
  'lambda',
  'nonlocal',
  'not',
  'or',
  'pass',
  'raise',
  'return',
  'try',
  'while',
  'with',
  'yield',
]);

/** Statements of one line (`;` separates several); an empty line or a comment gives none. */
export function parseLine(line: string): Statement[] {
  return new Parser(tokenize(line)).statements();
}

class Parser {
  private pos = 0;
  private depth = 0;
  constructor(private readonly tokens: Token[]) {}

  statements(): Statement[] {
    const out: Statement[] = [];
    while (this.peek().kind !== 'end') {
      if (this.isOp(';')) {
        this.pos++;
        continue;
      }
      out.push(this.statement());
      if (this.peek().kind !== 'end') this.expectOp(';');
    }
    return out;
  }

  private statement(): Statement {
    const t = this.peek();
    if (t.kind === 'name' && t.text === 'del') {
      this.pos++;
      const names = [this.targetName()];
      while (this.isOp(',')) {
        this.pos++;
        names.push(this.targetName());
      }
      return { kind: 'del', names };
    }
    if (t.kind === 'name' && t.text === 'import') {
      // `import torch` is what people type first; torch is already there.
      this.pos++;
      const mod = this.targetName();
      if (mod !== 'torch') throw new PlaygroundSyntaxError(`only torch is available here (import ${mod})`, t.col);
      return { kind: 'expr', expr: { kind: 'name', name: 'None', col: t.col } };
    }
    if (t.kind === 'name' && KEYWORDS.has(t.text))
      throw new PlaygroundSyntaxError(`"${t.text}" statements are not supported in the playground (try help)`, t.col);
    // Chained assignment `a = b = expr`: every target is a plain name.
    const targets: string[] = [];
    while (this.peek().kind === 'name' && this.peekAt(1).kind === 'op' && this.peekAt(1).text === '=') {
      targets.push(this.targetName());
      this.pos++; // '='
    }
    const expr = this.expr();
    if (this.isOp('=')) throw new PlaygroundSyntaxError('can only assign to a plain name, like x = ...', this.peek().col);
    return targets.length ? { kind: 'assign', targets, expr } : { kind: 'expr', expr };
  }

  private targetName(): string {
    const t = this.peek();
    if (t.kind !== 'name') throw this.unexpected('a name');
    if (KEYWORDS.has(t.text)) throw new PlaygroundSyntaxError(`"${t.text}" is a keyword, not a name`, t.col);
    this.pos++;
    return t.text;
  }

  // Python's precedence: + - below * @ / // %, below unary -, below **.
  private expr(): Expr {
    this.enter();
    let left = this.term();
    while (this.isOp('+') || this.isOp('-')) {
      const op = this.next();
      left = { kind: 'binary', op: op.text as '+' | '-', left, right: this.term(), col: op.col };
    }
    this.depth--;
    return left;
  }

  private term(): Expr {
    let left = this.unary();
    while (this.isOp('*') || this.isOp('@') || this.isOp('/') || this.isOp('//') || this.isOp('%')) {
      const op = this.next();
      left = { kind: 'binary', op: op.text as '*', left, right: this.unary(), col: op.col };
    }
    return left;
  }

  private unary(): Expr {
    if (this.isOp('-') || this.isOp('+')) {
      const op = this.next();
      this.enter();
      const operand = this.unary();
      this.depth--;
      return { kind: 'unary', op: op.text as '-' | '+', operand, col: op.col };
    }
    return this.power();
  }

  private power(): Expr {
    const base = this.postfix();
    if (this.isOp('**')) {
      const op = this.next();
      this.enter();
      const right = this.unary(); // right-associative, binds tighter than unary on its left only
      this.depth--;
      return { kind: 'binary', op: '**', left: base, right, col: op.col };
    }
    return base;
  }

  private postfix(): Expr {
    let e = this.atom();
    for (;;) {
      if (this.isOp('.')) {
        const dot = this.next();
        const name = this.peek();
        if (name.kind !== 'name') throw this.unexpected('an attribute name after "."');
        this.pos++;
        e = { kind: 'attr', target: e, name: name.text, col: dot.col };
      } else if (this.isOp('(')) {
        const open = this.next();
        this.enter();
        const { args, kwargs } = this.arguments();
        this.depth--;
        e = { kind: 'call', fn: e, args, kwargs, col: open.col };
      } else if (this.isOp('[')) {
        throw new PlaygroundSyntaxError('indexing and slicing (x[...]) are not supported in the playground', this.peek().col);
      } else {
        return e;
      }
    }
  }

  private arguments(): { args: Expr[]; kwargs: Array<{ name: string; value: Expr }> } {
    const args: Expr[] = [];
    const kwargs: Array<{ name: string; value: Expr }> = [];
    while (!this.isOp(')')) {
      const t = this.peek();
      if (t.kind === 'name' && this.peekAt(1).kind === 'op' && this.peekAt(1).text === '=') {
        this.pos += 2;
        if (kwargs.some((k) => k.name === t.text)) throw new PlaygroundSyntaxError(`keyword argument repeated: ${t.text}`, t.col);
        kwargs.push({ name: t.text, value: this.expr() });
      } else {
        if (kwargs.length) throw new PlaygroundSyntaxError('positional argument follows keyword argument', t.col);
        args.push(this.expr());
      }
      if (this.isOp(',')) this.pos++;
      else if (!this.isOp(')')) throw this.unexpected('"," or ")"');
    }
    this.pos++; // ')'
    return { args, kwargs };
  }

  private atom(): Expr {
    const t = this.peek();
    if (t.kind === 'name') {
      if (KEYWORDS.has(t.text)) throw new PlaygroundSyntaxError(`unexpected keyword "${t.text}"`, t.col);
      this.pos++;
      return { kind: 'name', name: t.text, col: t.col };
    }
    if (t.kind === 'number') {
      this.pos++;
      return { kind: 'number', value: t.value!, isInt: t.isInt!, col: t.col };
    }
    if (t.kind === 'string') {
      this.pos++;
      return { kind: 'string', value: t.text, col: t.col };
    }
    if (this.isOp('(') || this.isOp('[')) {
      const list = t.text === '[';
      const close = list ? ']' : ')';
      this.pos++;
      this.enter();
      const items: Expr[] = [];
      let comma = false;
      while (!this.isOp(close)) {
        items.push(this.expr());
        if (this.isOp(',')) {
          this.pos++;
          comma = true;
        } else if (!this.isOp(close)) throw this.unexpected(`"," or "${close}"`);
      }
      this.pos++;
      this.depth--;
      // (e) is just e; (e,) and () are tuples.
      if (!list && items.length === 1 && !comma) return items[0];
      return { kind: 'tuple', items, list, col: t.col };
    }
    throw this.unexpected('an expression');
  }

  private enter(): void {
    if (++this.depth > MAX_DEPTH) throw new PlaygroundSyntaxError('expression nested too deeply', this.peek().col);
  }
  private peek(): Token {
    return this.tokens[this.pos];
  }
  private peekAt(k: number): Token {
    return this.tokens[Math.min(this.pos + k, this.tokens.length - 1)];
  }
  private next(): Token {
    return this.tokens[this.pos++];
  }
  private isOp(text: string): boolean {
    const t = this.peek();
    return t.kind === 'op' && t.text === text;
  }
  private expectOp(text: string): void {
    if (!this.isOp(text)) throw this.unexpected(`"${text}"`);
    this.pos++;
  }
  private unexpected(wanted: string): PlaygroundSyntaxError {
    const t = this.peek();
    const what = t.kind === 'end' ? 'end of line' : `"${t.text}"`;
    return new PlaygroundSyntaxError(`invalid syntax: expected ${wanted}, found ${what}`, t.col);
  }
}

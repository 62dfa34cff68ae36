// The playground's parser on its own: what it reads, what it refuses, and that it never
// evaluates anything (it only builds a tree).
import { describe, expect, it } from 'vitest';
import { PlaygroundSyntaxError, tokenize } from '../../main/playground/lexer';
import { parseLine } from '../../main/playground/parser';

describe('playground lexer', () => {
  it('reads names, ints, floats, strings and operators with their columns', () => {
    const t = tokenize("x = randn(1_000, 2.5e3, 'a') @ y ** 2 // 3  # comment");
    expect(t.map((k) => (k.kind === 'number' ? `${k.value}${k.isInt ? 'i' : 'f'}` : k.text))).toEqual([
      'x',
      '=',
      'randn',
      '(',
      '1000i',
      ',',
      '2500f',
      ',',
      'a',
      ')',
      '@',
      'y',
      '**',
      '2i',
      '//',
      '3i',
      '',
    ]);
    expect(t[2].col).toBe(4);
  });
  it('refuses what it does not know', () => {
    expect(() => tokenize('x = $')).toThrow(PlaygroundSyntaxError);
    expect(() => tokenize('x = "open')).toThrow(/unterminated/);
    expect(() => tokenize('x = 12abc')).toThrow(/invalid number/);
    expect(() => tokenize('x = "\\x41"')).toThrow(/escapes/);
  });
});

describe('playground parser', () => {
  it('parses assignment, calls with keywords, methods and @ with Python precedence', () => {
    const [s] = parseLine('w = torch.randn(10, 20, dtype=torch.float16).t() @ y + 1');
    expect(s.kind).toBe('assign');
    if (s.kind !== 'assign') return;
    expect(s.targets).toEqual(['w']);
    // + binds looser than @
    expect(s.expr.kind).toBe('binary');
    if (s.expr.kind !== 'binary') return;
    expect(s.expr.op).toBe('+');
    const mm = s.expr.left;
    expect(mm.kind === 'binary' && mm.op).toBe('@');
    if (mm.kind !== 'binary') return;
    const t = mm.left;
    expect(t.kind).toBe('call');
    if (t.kind !== 'call' || t.fn.kind !== 'attr') throw new Error('expected a method call');
    expect(t.fn.name).toBe('t');
    const randn = t.fn.target;
    if (randn.kind !== 'call') throw new Error('expected a call');
    expect(randn.args.map((a) => a.kind === 'number' && a.value)).toEqual([10, 20]);
    expect(randn.kwargs.map((k) => k.name)).toEqual(['dtype']);
  });

  it('parses del lists, chained assignment, tuples and several statements', () => {
    expect(parseLine('del x, y')).toEqual([{ kind: 'del', names: ['x', 'y'] }]);
    const chained = parseLine('a = b = x.clone()');
    expect(chained[0].kind === 'assign' && chained[0].targets).toEqual(['a', 'b']);
    const tup = parseLine('randn((2, 3))')[0];
    if (tup.kind !== 'expr' || tup.expr.kind !== 'call') throw new Error('expected a call');
    expect(tup.expr.args[0].kind).toBe('tuple');
    expect(parseLine('x = randn(4); y = x.view(-1);').map((s) => s.kind)).toEqual(['assign', 'assign']);
    expect(parseLine('   # only a comment')).toEqual([]);
    // (e) is e; (e,) is a one-element tuple
    const one = parseLine('(3,)')[0];
    expect(one.kind === 'expr' && one.expr.kind).toBe('tuple');
    const paren = parseLine('(3)')[0];
    expect(paren.kind === 'expr' && paren.expr.kind).toBe('number');
    // ** is right-associative and binds tighter than unary minus on its left
    const pw = parseLine('-2 ** 2')[0];
    expect(pw.kind === 'expr' && pw.expr.kind).toBe('unary');
  });

  it('gives syntax errors with a reason for bad lines', () => {
    const bad: Array<[string, RegExp]> = [
      ['x = ', /expected an expression, found end of line/],
      ['x = randn(10', /expected "," or "\)"/],
      ['x.y = 3', /plain name/],
      ['x[0]', /indexing and slicing/],
      ['for i in range(3): pass', /"for" statements are not supported/],
      ['import os', /only torch/],
      ['randn(dtype=float16, 3)', /positional argument follows keyword argument/],
      ['f(a=1, a=2)', /repeated/],
      ['x = randn(10) y = 3', /expected ";"/],
      ['lambda: 0', /not supported/],
      ['del 3', /expected a name/],
    ];
    for (const [line, msg] of bad) {
      expect(() => parseLine(line), line).toThrow(PlaygroundSyntaxError);
      expect(() => parseLine(line), line).toThrow(msg);
    }
  });

  it('refuses nesting deep enough to exhaust the stack', () => {
    expect(() => parseLine('x = ' + '('.repeat(200) + '1' + ')'.repeat(200))).toThrow(/nested too deeply/);
    expect(() => parseLine('x = ' + '-'.repeat(200) + '1')).toThrow(/nested too deeply/);
    expect(() => parseLine('x' + '.t()'.repeat(40))).not.toThrow();
    expect(() => parseLine('x = ' + '1 + '.repeat(600) + '1')).toThrow(/line too long/);
  });
});

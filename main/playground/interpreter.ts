// Runs parsed playground statements against a native session with Python's lifetimes:
// names hold references, a tensor's memory goes back to the allocator when its last
// reference (name, view or temporary) goes away, a temporary dies as soon as the op that
// used it returns, and `x = ...` builds the new tensor before the old one is released.
import type { PlaygroundTensor } from '../contract/playground';
import { HELP_TEXT } from './help';
import { PlaygroundSyntaxError } from './lexer';
import type { NativeDType, NativeSession, NativeTensorInfo } from './native';
import { parseLine, type Expr, type Statement } from './parser';
import {
  attributeError,
  dtypeNamed,
  isUnsupportedDtype,
  ITEMSIZE,
  NONE,
  nameError,
  PlaygroundError,
  reprValue,
  runtimeError,
  tensorRepr,
  typeError,
  typeName,
  valueError,
  type Value,
} from './values';

const MAX_NAMES = 1000;
const MAX_OUTPUT = 64 * 1024;
const MAX_DIMS = 16;

type TorchFn = 'randn' | 'zeros' | 'ones' | 'empty' | 'matmul' | 'mm';
type CudaFn =
  | 'empty_cache'
  | 'memory_allocated'
  | 'memory_reserved'
  | 'max_memory_allocated'
  | 'max_memory_reserved'
  | 'reset_peak_memory_stats'
  | 'memory_summary';
const TORCH_FNS = new Set<string>(['randn', 'zeros', 'ones', 'empty', 'matmul', 'mm']);
const CUDA_FNS = new Set<string>([
  'empty_cache',
  'memory_allocated',
  'memory_reserved',
  'max_memory_allocated',
  'max_memory_reserved',
  'reset_peak_memory_stats',
  'memory_summary',
]);
const BUILTINS = new Set<string>(['print', 'help', 'len']);
/** Names a command cannot rebind: the functions and dtypes the playground provides. */
const RESERVED = new Set<string>(['torch', 'None', 'True', 'False', ...TORCH_FNS, ...CUDA_FNS, ...BUILTINS]);

export interface ExecResult {
  output: string;
  error: boolean;
}

/** A value produced while evaluating one statement; `temp` tensors hold a reference of their own. */
interface Held {
  value: Value;
  temp: boolean;
}

export class Interpreter {
  private readonly names = new Map<string, Value>();
  private readonly refs = new Map<number, number>();
  /** Temporaries alive in the statement being run (released on error too). */
  private temps = new Set<Held>();
  private out: string[] = [];

  constructor(
    private readonly native: NativeSession,
    private readonly deviceLabel: string,
  ) {}

  /** Runs one line; errors (syntax, names, shapes, OOM) come back as text, never thrown. */
  exec(line: string): ExecResult {
    this.out = [];
    try {
      const statements = parseLine(line);
      for (const s of statements) this.statement(s);
      return { output: this.output(), error: false };
    } catch (err) {
      this.out.push(describe(err));
      return { output: this.output(), error: true };
    } finally {
      for (const t of this.temps) this.dropTemp(t);
      this.temps = new Set();
    }
  }

  /** Named tensors, in the order their names were first bound. */
  tensors(): PlaygroundTensor[] {
    const list: PlaygroundTensor[] = [];
    for (const [name, v] of this.names) {
      if (v.kind !== 'tensor') continue;
      const i = this.native.info(v.id);
      list.push({ name, shape: i.shape, dtype: i.dtype, bytes: i.storageBytes, view: i.isView });
    }
    return list;
  }

  private output(): string {
    const s = this.out.join('\n');
    return s.length > MAX_OUTPUT ? `${s.slice(0, MAX_OUTPUT)}\n... (output cut at ${MAX_OUTPUT} characters)` : s;
  }

  // ---- statements ----

  private statement(s: Statement): void {
    if (s.kind === 'del') {
      for (const name of s.names) {
        const old = this.names.get(name);
        if (!old) throw nameError(name);
        this.names.delete(name);
        this.unref(old);
      }
      return;
    }
    if (s.kind === 'assign') {
      for (const t of s.targets) {
        if (RESERVED.has(t) || dtypeNamed(t)) throw typeError(`cannot assign to '${t}' here: the playground uses that name`);
        if (!this.names.has(t) && this.names.size >= MAX_NAMES) throw runtimeError(`too many names (over ${MAX_NAMES}); del some first`);
      }
      const h = this.eval(s.expr);
      // Each target takes a reference (the first one inherits a temporary's), then drops its old value.
      s.targets.forEach((t, i) => {
        if (i > 0 || !h.temp) this.ref(h.value);
        this.temps.delete(h);
        const old = this.names.get(t);
        this.names.set(t, h.value);
        if (old) this.unref(old);
      });
      return;
    }
    // A bare `help` (no call) prints the help, as in the Python REPL banner's hint.
    if (s.expr.kind === 'name' && s.expr.name === 'help' && !this.names.has('help')) {
      this.out.push(HELP_TEXT);
      return;
    }
    const h = this.eval(s.expr);
    if (h.value.kind !== 'none') this.out.push(this.repr(h.value));
    this.dropTemp(h);
  }

  // ---- references ----

  private ref(v: Value): void {
    if (v.kind === 'tensor') this.refs.set(v.id, (this.refs.get(v.id) ?? 0) + 1);
  }
  private unref(v: Value): void {
    if (v.kind !== 'tensor') return;
    const n = (this.refs.get(v.id) ?? 1) - 1;
    if (n > 0) {
      this.refs.set(v.id, n);
      return;
    }
    this.refs.delete(v.id);
    this.native.del(v.id);
  }
  private temp(id: number): Held {
    this.refs.set(id, 1);
    const h: Held = { value: { kind: 'tensor', id }, temp: true };
    this.temps.add(h);
    return h;
  }
  private dropTemp(h: Held): void {
    if (!h.temp || !this.temps.delete(h)) return;
    this.unref(h.value);
  }
  private plain(value: Value): Held {
    return { value, temp: false };
  }
  /** Runs a native op over `inputs`; the inputs' temporaries die once it returns, as Python's do. */
  private op(inputs: Held[], run: () => number): Held {
    const id = run();
    const out = this.temp(id);
    for (const h of inputs) this.dropTemp(h);
    return out;
  }

  // ---- expressions ----

  private eval(e: Expr): Held {
    switch (e.kind) {
      case 'number':
        if (e.isInt && !Number.isSafeInteger(e.value)) throw valueError('integer too large for the playground (over 2**53)');
        return this.plain({ kind: 'number', value: e.value, isInt: e.isInt });
      case 'string':
        return this.plain({ kind: 'string', value: e.value });
      case 'name':
        return this.plain(this.lookup(e.name));
      case 'tuple': {
        const items = e.items.map((i) => this.eval(i));
        if (items.some((h) => h.value.kind === 'tensor')) {
          items.forEach((h) => this.dropTemp(h));
          throw typeError('tuples and lists of tensors are not supported in the playground');
        }
        return this.plain({ kind: 'tuple', items: items.map((h) => h.value), size: false });
      }
      case 'unary': {
        const v = this.eval(e.operand);
        if (v.value.kind === 'bool' || v.value.kind === 'number') {
          const n = v.value.kind === 'bool' ? Number(v.value.value) : v.value.value;
          const isInt = v.value.kind === 'bool' || v.value.isInt;
          return this.plain({ kind: 'number', value: e.op === '-' ? -n : n, isInt });
        }
        this.dropTemp(v);
        throw typeError(
          `bad operand type for unary ${e.op}: '${typeName(v.value)}'${v.value.kind === 'tensor' ? ' (tensor arithmetic other than @ is not modelled here)' : ''}`,
        );
      }
      case 'binary':
        return this.binary(e);
      case 'attr':
        return this.attribute(e);
      case 'call':
        return this.call(e);
    }
  }

  private lookup(name: string): Value {
    const v = this.names.get(name);
    if (v) return v;
    if (name === 'None') return NONE;
    if (name === 'True' || name === 'False') return { kind: 'bool', value: name === 'True' };
    const dt = dtypeNamed(name);
    if (dt) return { kind: 'dtype', dtype: dt };
    if (isUnsupportedDtype(name)) throw typeError(unsupportedDtype(name));
    if (name === 'torch' || TORCH_FNS.has(name) || CUDA_FNS.has(name) || BUILTINS.has(name))
      throw typeError(
        `${name} is a ${name === 'torch' ? 'module' : 'function'}: call it, e.g. ${name === 'torch' ? 'torch.randn(10)' : `${name}(...)`}`,
      );
    throw nameError(name);
  }

  private binary(e: Extract<Expr, { kind: 'binary' }>): Held {
    const l = this.eval(e.left);
    const r = this.eval(e.right);
    if (e.op === '@') {
      if (l.value.kind !== 'tensor' || r.value.kind !== 'tensor') {
        this.dropTemp(l);
        this.dropTemp(r);
        throw typeError(`unsupported operand type(s) for @: '${typeName(l.value)}' and '${typeName(r.value)}'`);
      }
      const [a, b] = [l.value.id, r.value.id];
      return this.op([l, r], () => this.native.matmul(a, b));
    }
    const lv = l.value;
    const rv = r.value;
    if (lv.kind !== 'number' || rv.kind !== 'number') {
      this.dropTemp(l);
      this.dropTemp(r);
      const tensor = lv.kind === 'tensor' || rv.kind === 'tensor';
      throw typeError(
        `unsupported operand type(s) for ${e.op}: '${typeName(lv)}' and '${typeName(rv)}'${tensor ? ' (only @ is modelled for tensors here)' : ''}`,
      );
    }
    return this.plain(arithmetic(e.op, lv.value, lv.isInt, rv.value, rv.isInt));
  }

  private attribute(e: Extract<Expr, { kind: 'attr' }>): Held {
    const path = dottedPath(e);
    if (path && path[0] === 'torch' && !this.names.has('torch')) {
      if (path.length === 2) {
        const dt = dtypeNamed(path[1]);
        if (dt) return this.plain({ kind: 'dtype', dtype: dt });
        if (isUnsupportedDtype(path[1])) throw typeError(unsupportedDtype(path[1]));
      }
      throw attributeError(
        `module '${path.slice(0, -1).join('.')}' has no attribute '${path[path.length - 1]}' here (or call it: ${path.join('.')}(...))`,
      );
    }
    const target = this.eval(e.target);
    if (target.value.kind !== 'tensor') {
      this.dropTemp(target);
      throw attributeError(`'${typeName(target.value)}' object has no attribute '${e.name}'`);
    }
    const id = target.value.id;
    switch (e.name) {
      case 'shape': {
        const info = this.native.info(id);
        this.dropTemp(target);
        return this.plain(sizeValue(info.shape));
      }
      case 'dtype': {
        const info = this.native.info(id);
        this.dropTemp(target);
        return this.plain({ kind: 'dtype', dtype: info.dtype as NativeDType });
      }
      case 'nbytes':
      case 'ndim': {
        const info = this.native.info(id);
        this.dropTemp(target);
        return this.plain(int(e.name === 'nbytes' ? info.bytes : info.shape.length));
      }
      case 'T':
        return this.op([target], () => this.native.t(id));
      case 'device':
        this.dropTemp(target);
        return this.plain({ kind: 'text', value: `device(type='${this.deviceLabel}')` });
      default:
        this.dropTemp(target);
        if (TENSOR_METHODS.has(e.name)) throw typeError(`Tensor.${e.name} is a method: call it, e.g. x.${e.name}()`);
        throw attributeError(`'Tensor' object has no attribute '${e.name}' in the playground (try help)`);
    }
  }

  private call(e: Extract<Expr, { kind: 'call' }>): Held {
    const path = dottedPath(e.fn);
    if (path && !this.names.has(path[0])) return this.functionCall(path, e);
    if (e.fn.kind !== 'attr') {
      const f = this.eval(e.fn);
      this.dropTemp(f);
      throw typeError(`'${typeName(f.value)}' object is not callable`);
    }
    const target = this.eval(e.fn.target);
    if (target.value.kind !== 'tensor') {
      this.dropTemp(target);
      throw attributeError(`'${typeName(target.value)}' object has no attribute '${e.fn.name}'`);
    }
    return this.method(target, e.fn.name, e);
  }

  private args(e: Extract<Expr, { kind: 'call' }>): { args: Held[]; kwargs: Map<string, Held> } {
    const args: Held[] = [];
    const kwargs = new Map<string, Held>();
    for (const a of e.args) args.push(this.eval(a));
    for (const k of e.kwargs) kwargs.set(k.name, this.eval(k.value));
    // Keyword values are read, not kept; positional tensors are the op's inputs.
    return { args, kwargs };
  }

  private functionCall(path: string[], e: Extract<Expr, { kind: 'call' }>): Held {
    const full = path.join('.');
    let fn: string | undefined;
    if (path.length === 1) fn = path[0];
    else if (path.length === 2 && path[0] === 'torch' && TORCH_FNS.has(path[1])) fn = path[1];
    else if (path.length === 3 && path[0] === 'torch' && path[1] === 'cuda' && CUDA_FNS.has(path[2])) fn = path[2];
    else if (path[0] === 'torch')
      throw attributeError(
        `module '${path.slice(0, -1).join('.')}' has no attribute '${path[path.length - 1]}' in the playground (try help)`,
      );
    if (!fn || !(TORCH_FNS.has(fn) || CUDA_FNS.has(fn) || BUILTINS.has(fn))) {
      if (path.length === 1 && (dtypeNamed(path[0]) || isUnsupportedDtype(path[0])))
        throw typeError(`'torch.dtype' object is not callable`);
      throw nameError(path[0]);
    }
    const { args, kwargs } = this.args(e);
    try {
      if (TORCH_FNS.has(fn)) return this.torchFn(fn as TorchFn, full, args, kwargs);
      if (CUDA_FNS.has(fn)) return this.cudaFn(fn as CudaFn, full, args, kwargs);
      return this.builtin(fn, args, kwargs);
    } finally {
      for (const h of [...args, ...kwargs.values()]) this.dropTemp(h);
    }
  }

  private torchFn(fn: TorchFn, full: string, args: Held[], kwargs: Map<string, Held>): Held {
    if (fn === 'matmul' || fn === 'mm') {
      noKwargs(full, kwargs);
      if (args.length !== 2) throw typeError(`${full}() takes 2 tensors (${args.length} given)`);
      const [a, b] = args.map((h) => h.value);
      if (a.kind !== 'tensor' || b.kind !== 'tensor')
        throw typeError(`${full}(): arguments must be tensors, not ${typeName(a)} and ${typeName(b)}`);
      if (fn === 'mm') this.checkMatrices(a.id, b.id);
      return this.op(args, () => this.native.matmul(a.id, b.id));
    }
    const shape = shapeArgs(full, args, kwargs.get('size'), false);
    let dtype: NativeDType = 'float32';
    for (const [k, h] of kwargs) {
      if (k === 'dtype') dtype = dtypeOf(h.value, full);
      else if (k === 'device') checkDevice(h.value, full);
      else if (k === 'requires_grad') {
        if (h.value.kind !== 'bool') throw typeError(`${full}(): requires_grad must be True or False`);
        if (h.value.value) throw valueError('requires_grad=True: autograd is not part of the playground (memory is the same at creation)');
      } else if (k !== 'size') throw typeError(`${full}() got an unexpected keyword argument '${k}'`);
    }
    checkNumel(shape, dtype);
    return this.op([], () => this.native[fn](shape, dtype));
  }

  private cudaFn(fn: CudaFn, full: string, args: Held[], kwargs: Map<string, Held>): Held {
    const device = kwargs.get('device') ?? args[0];
    if (device) checkDevice(device.value, full);
    for (const k of kwargs.keys())
      if (k !== 'device' && !(fn === 'memory_summary' && k === 'abbreviated'))
        throw typeError(`${full}() got an unexpected keyword argument '${k}'`);
    if (args.length > 1) throw typeError(`${full}() takes at most 1 positional argument (${args.length} given)`);
    switch (fn) {
      case 'empty_cache':
        this.native.emptyCache();
        return this.plain(NONE);
      case 'reset_peak_memory_stats':
        this.native.resetPeak();
        return this.plain(NONE);
      case 'memory_allocated':
        return this.plain(int(this.native.memoryAllocated()));
      case 'memory_reserved':
        return this.plain(int(this.native.memoryReserved()));
      case 'max_memory_allocated':
        return this.plain(int(this.native.maxMemoryAllocated()));
      case 'max_memory_reserved':
        return this.plain(int(this.native.maxMemoryReserved()));
      case 'memory_summary': {
        const ab = kwargs.get('abbreviated')?.value;
        if (ab && ab.kind !== 'bool') throw typeError('memory_summary(): abbreviated must be True or False');
        return this.plain({ kind: 'text', value: this.native.memorySummary(ab?.kind === 'bool' && ab.value) });
      }
    }
  }

  private builtin(fn: string, args: Held[], kwargs: Map<string, Held>): Held {
    noKwargs(fn, kwargs);
    if (fn === 'help') return this.plain({ kind: 'text', value: HELP_TEXT });
    if (fn === 'print') {
      this.out.push(args.map((h) => (h.value.kind === 'string' ? h.value.value : this.repr(h.value))).join(' '));
      return this.plain(NONE);
    }
    // len(x): the first dimension
    if (args.length !== 1) throw typeError(`len() takes exactly one argument (${args.length} given)`);
    const v = args[0].value;
    if (v.kind === 'tuple') return this.plain(int(v.items.length));
    if (v.kind === 'string') return this.plain(int(v.value.length));
    if (v.kind !== 'tensor') throw typeError(`object of type '${typeName(v)}' has no len()`);
    const shape = this.native.info(v.id).shape;
    if (!shape.length) throw typeError('len() of a 0-d tensor');
    return this.plain(int(shape[0]));
  }

  private method(target: Held, name: string, e: Extract<Expr, { kind: 'call' }>): Held {
    const { args, kwargs } = this.args(e);
    const id = (target.value as { id: number }).id;
    try {
      switch (name) {
        case 'view':
        case 'reshape': {
          noKwargs(`${name}`, kwargs);
          if (args.length === 1 && args[0].value.kind === 'dtype')
            throw typeError(`x.${name}(dtype) reinterprets bytes; it is not modelled in the playground`);
          const shape = shapeArgs(name, args, undefined, true);
          return this.op([target], () => (name === 'view' ? this.native.view(id, shape) : this.native.reshape(id, shape)));
        }
        case 't':
        case 'clone':
        case 'contiguous': {
          noKwargs(name, kwargs);
          if (args.length) throw typeError(`${name}() takes no arguments (${args.length} given)`);
          return this.op([target], () => this.native[name](id));
        }
        case 'half':
        case 'float':
        case 'bfloat16':
        case 'double': {
          noKwargs(name, kwargs);
          if (args.length) throw typeError(`${name}() takes no arguments (${args.length} given)`);
          const dtype = dtypeNamed(name)!;
          return this.op([target], () => this.native.to(id, dtype));
        }
        case 'to':
          return this.op([target], () => this.native.to(id, this.toTarget(id, args, kwargs)));
        case 'cuda': {
          if (args[0]) checkDevice(args[0].value, 'cuda');
          return target; // already on the session's device: the same tensor, as in PyTorch
        }
        case 'matmul':
        case 'mm': {
          noKwargs(name, kwargs);
          const other = args[0]?.value;
          if (args.length !== 1 || other?.kind !== 'tensor') throw typeError(`${name}(): expects one tensor argument`);
          if (name === 'mm') this.checkMatrices(id, other.id);
          return this.op([target, args[0]], () => this.native.matmul(id, other.id));
        }
        case 'size':
        case 'numel':
        case 'dim':
        case 'element_size':
        case 'is_contiguous':
        case 'data_ptr':
          return this.query(target, name, args, kwargs);
        default:
          throw attributeError(`'Tensor' object has no attribute '${name}' in the playground (try help)`);
      }
    } finally {
      for (const h of [...args, ...kwargs.values()]) this.dropTemp(h);
      // A target not consumed by an op (an error, or a query) dies here if it was a temporary.
      if (name !== 'cuda') this.dropTemp(target);
    }
  }

  /** x.to(dtype), x.to('cuda', dtype), x.to(dtype=...), x.to(other_tensor). */
  private toTarget(id: number, args: Held[], kwargs: Map<string, Held>): NativeDType {
    let dtype: NativeDType | undefined;
    for (const h of args) {
      const v = h.value;
      if (v.kind === 'dtype') dtype = v.dtype;
      else if (v.kind === 'string') checkDevice(v, 'to');
      else if (v.kind === 'tensor') dtype = this.native.info(v.id).dtype as NativeDType;
      else throw typeError(`to() received an invalid combination of arguments: got (${typeName(v)})`);
    }
    for (const [k, h] of kwargs) {
      if (k === 'dtype') dtype = dtypeOf(h.value, 'to');
      else if (k === 'device') checkDevice(h.value, 'to');
      else if (k !== 'non_blocking' && k !== 'copy') throw typeError(`to() got an unexpected keyword argument '${k}'`);
      if (k === 'copy' && h.value.kind === 'bool' && h.value.value)
        throw valueError('to(copy=True) is not modelled in the playground: use clone()');
    }
    return dtype ?? (this.native.info(id).dtype as NativeDType);
  }

  private query(target: Held, name: string, args: Held[], kwargs: Map<string, Held>): Held {
    noKwargs(name, kwargs);
    const info = this.native.info((target.value as { id: number }).id);
    switch (name) {
      case 'size': {
        if (!args.length) return this.plain(sizeValue(info.shape));
        const d = args[0].value;
        if (d.kind !== 'number' || !d.isInt) throw typeError('size(): dim must be an int');
        const n = info.shape.length;
        if (d.value < -n || d.value >= n)
          throw new PlaygroundError(
            'IndexError',
            `Dimension out of range (expected to be in range of [${-n}, ${n - 1}], but got ${d.value})`,
          );
        return this.plain(int(info.shape[d.value < 0 ? d.value + n : d.value]));
      }
      case 'numel':
        return this.plain(int(info.shape.reduce((a, b) => a * b, 1)));
      case 'dim':
        return this.plain(int(info.shape.length));
      case 'element_size':
        return this.plain(int(ITEMSIZE[info.dtype as NativeDType] ?? 0));
      case 'is_contiguous':
        return this.plain({ kind: 'bool', value: info.contiguous });
      default:
        return this.plain(int(info.address));
    }
  }

  private checkMatrices(a: number, b: number): void {
    if (this.native.info(a).shape.length !== 2) throw runtimeError('self must be a matrix');
    if (this.native.info(b).shape.length !== 2) throw runtimeError('mat2 must be a matrix');
  }

  private repr(v: Value): string {
    if (v.kind !== 'tensor') return reprValue(v);
    const info: NativeTensorInfo = this.native.info(v.id);
    const shared: string[] = [];
    for (const [name, other] of this.names) {
      if (other.kind !== 'tensor' || other.id === v.id || info.storageBytes === 0) continue;
      if (this.native.info(other.id).storageKey === info.storageKey) shared.push(name);
    }
    return tensorRepr(info, this.deviceLabel, shared);
  }
}

// ---- helpers ----

function describe(err: unknown): string {
  if (err instanceof PlaygroundError) return `${err.pyType}: ${err.message}`;
  if (err instanceof PlaygroundSyntaxError) return `SyntaxError: ${err.message} (column ${err.col + 1})`;
  if (err instanceof Error) {
    // The native OOM keeps PyTorch's wording; PyTorch raises it as torch.OutOfMemoryError.
    if ((err as { oom?: boolean }).oom || err.message.startsWith('CUDA out of memory')) return `torch.OutOfMemoryError: ${err.message}`;
    return `RuntimeError: ${err.message}`;
  }
  return `RuntimeError: ${String(err)}`;
}

function int(n: number): Value {
  return { kind: 'number', value: n, isInt: true };
}

function sizeValue(shape: number[]): Value {
  return { kind: 'tuple', items: shape.map(int), size: true };
}

function dottedPath(e: Expr): string[] | null {
  if (e.kind === 'name') return [e.name];
  if (e.kind === 'attr') {
    const p = dottedPath(e.target);
    return p ? [...p, e.name] : null;
  }
  return null;
}

const TENSOR_METHODS = new Set([
  'view',
  'reshape',
  't',
  'clone',
  'contiguous',
  'to',
  'half',
  'float',
  'bfloat16',
  'double',
  'cuda',
  'matmul',
  'mm',
  'size',
  'numel',
  'dim',
  'element_size',
  'is_contiguous',
  'data_ptr',
]);

function noKwargs(fn: string, kwargs: Map<string, Held>): void {
  const k = kwargs.keys().next();
  if (!k.done) throw typeError(`${fn}() got an unexpected keyword argument '${k.value}'`);
}

function unsupportedDtype(name: string): string {
  return `dtype ${name} is not supported in the playground (float32, float16, bfloat16 or float64)`;
}

function dtypeOf(v: Value, fn: string): NativeDType {
  if (v.kind === 'dtype') return v.dtype;
  if (v.kind === 'string') {
    const dt = dtypeNamed(v.value.replace(/^torch\./, ''));
    if (dt) return dt;
  }
  throw typeError(`${fn}(): dtype must be a torch.dtype such as torch.float16, not ${typeName(v)}`);
}

/** Every tensor lives on the session's device; 'cuda' / 'cuda:0' name it, 'cpu' is refused. */
function checkDevice(v: Value, fn: string): void {
  if (v.kind === 'number' && v.isInt && v.value === 0) return;
  if (v.kind === 'string' && /^cuda(:0)?$/.test(v.value)) return;
  if (v.kind === 'string' && /^cuda:\d+$/.test(v.value))
    throw runtimeError(`${fn}(): the playground has one device, cuda:0 (the session's)`);
  if (v.kind === 'string' && v.value === 'cpu')
    throw valueError(`${fn}(): CPU tensors are not modelled here; tensors live on the session's device ('cuda')`);
  throw typeError(`${fn}(): device must be 'cuda' (the session's device), not ${reprValue(v)}`);
}

/** Shape from varargs ints or one tuple/list/Size; view/reshape allow one -1. */
function shapeArgs(fn: string, args: Held[], size: Held | undefined, allowInfer: boolean): number[] {
  let items: Value[];
  if (size) {
    if (args.length) throw typeError(`${fn}() got multiple values for argument 'size'`);
    items = size.value.kind === 'tuple' ? size.value.items : [size.value];
  } else if (args.length === 1 && args[0].value.kind === 'tuple') items = args[0].value.items;
  else items = args.map((h) => h.value);
  if (!allowInfer && !items.length && !size && args.length === 0) throw typeError(`${fn}() missing 1 required positional argument: 'size'`);
  if (items.length > MAX_DIMS) throw runtimeError(`${fn}(): at most ${MAX_DIMS} dimensions in the playground`);
  const shape = items.map((v, i) => {
    if (v.kind !== 'number' || !v.isInt)
      throw typeError(`${fn}(): argument 'size' must be tuple of ints, but found element of type ${typeName(v)} at pos ${i}`);
    return v.value;
  });
  if (allowInfer) {
    if (shape.filter((d) => d === -1).length > 1) throw runtimeError('only one dimension can be inferred');
    const bad = shape.find((d) => d < -1);
    if (bad !== undefined) throw runtimeError(`invalid shape dimension ${bad}`);
  } else {
    const bad = shape.find((d) => d < 0);
    if (bad !== undefined) throw runtimeError(`Trying to create tensor with negative dimension ${bad}: [${shape.join(', ')}]`);
  }
  return shape;
}

/** Refuses sizes past what a double can count exactly (PyTorch: storage size overflow). */
function checkNumel(shape: number[], dtype: NativeDType): void {
  let bytes = BigInt(ITEMSIZE[dtype]);
  for (const d of shape) bytes *= BigInt(d);
  if (bytes > BigInt(Number.MAX_SAFE_INTEGER)) throw runtimeError(`Storage size calculation overflowed with sizes=[${shape.join(', ')}]`);
}

function arithmetic(op: string, a: number, aInt: boolean, b: number, bInt: boolean): Value {
  const bothInt = aInt && bInt;
  let r: number;
  let isInt = bothInt;
  switch (op) {
    case '+':
      r = a + b;
      break;
    case '-':
      r = a - b;
      break;
    case '*':
      r = a * b;
      break;
    case '/':
      if (b === 0) throw new PlaygroundError('ZeroDivisionError', 'division by zero');
      r = a / b;
      isInt = false;
      break;
    case '//':
      if (b === 0) throw new PlaygroundError('ZeroDivisionError', 'integer division or modulo by zero');
      r = Math.floor(a / b);
      break;
    case '%':
      if (b === 0) throw new PlaygroundError('ZeroDivisionError', 'integer modulo by zero');
      r = a - b * Math.floor(a / b);
      break;
    default: // '**'
      r = a ** b;
      if (bothInt && b < 0) isInt = false;
  }
  if (isInt && !Number.isSafeInteger(r)) throw valueError('integer too large for the playground (over 2**53)');
  if (!isInt && !Number.isFinite(r)) throw new PlaygroundError('OverflowError', 'numerical result out of range');
  return { kind: 'number', value: r, isInt };
}

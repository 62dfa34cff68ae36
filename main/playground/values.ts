// What playground expressions evaluate to, and how Python would print them.
import type { NativeDType, NativeTensorInfo } from './native';

export type Value =
  | { kind: 'tensor'; id: number }
  | { kind: 'number'; value: number; isInt: boolean }
  | { kind: 'bool'; value: boolean }
  | { kind: 'string'; value: string }
  | { kind: 'none' }
  | { kind: 'dtype'; dtype: NativeDType }
  | { kind: 'tuple'; items: Value[]; size: boolean }
  /** Printed as is (memory_summary(), help): what print() would show. */
  | { kind: 'text'; value: string };

export const NONE: Value = { kind: 'none' };

/** Python error kinds; the message is shown as "<kind>: <message>". */
export class PlaygroundError extends Error {
  constructor(
    readonly pyType: string,
    message: string,
  ) {
    super(message);
    this.name = pyType;
  }
}

export const typeError = (m: string) => new PlaygroundError('TypeError', m);
export const valueError = (m: string) => new PlaygroundError('ValueError', m);
export const nameError = (name: string) => new PlaygroundError('NameError', `name '${name}' is not defined`);
export const attributeError = (m: string) => new PlaygroundError('AttributeError', m);
export const runtimeError = (m: string) => new PlaygroundError('RuntimeError', m);

/** Python-ish names and aliases of the dtypes the playground creates. */
const DTYPES: Record<string, NativeDType> = {
  float32: 'float32',
  float: 'float32',
  float16: 'float16',
  half: 'float16',
  bfloat16: 'bfloat16',
  float64: 'float64',
  double: 'float64',
};
const UNSUPPORTED_DTYPES = new Set([
  'int64',
  'long',
  'int32',
  'int',
  'int16',
  'short',
  'int8',
  'uint8',
  'bool',
  'complex64',
  'float8_e4m3fn',
  'float8_e5m2',
]);

export function dtypeNamed(name: string): NativeDType | undefined {
  return DTYPES[name];
}
export function isUnsupportedDtype(name: string): boolean {
  return UNSUPPORTED_DTYPES.has(name);
}
export const ITEMSIZE: Record<NativeDType, number> = { float32: 4, float16: 2, bfloat16: 2, float64: 8 };

export function typeName(v: Value): string {
  switch (v.kind) {
    case 'tensor':
      return 'Tensor';
    case 'number':
      return v.isInt ? 'int' : 'float';
    case 'bool':
      return 'bool';
    case 'string':
    case 'text':
      return 'str';
    case 'none':
      return 'NoneType';
    case 'dtype':
      return 'torch.dtype';
    case 'tuple':
      return v.size ? 'torch.Size' : 'tuple';
  }
}

export function formatNumber(v: number, isInt: boolean): string {
  if (isInt) return String(v);
  if (Number.isNaN(v)) return 'nan';
  if (!Number.isFinite(v)) return v > 0 ? 'inf' : '-inf';
  return Number.isInteger(v) && Math.abs(v) < 1e16 ? `${v}.0` : String(v);
}

/** repr() for everything but tensors (those need the session: see tensorRepr). */
export function reprValue(v: Value): string {
  switch (v.kind) {
    case 'number':
      return formatNumber(v.value, v.isInt);
    case 'bool':
      return v.value ? 'True' : 'False';
    case 'string':
      return `'${v.value}'`;
    case 'text':
      return v.value;
    case 'none':
      return 'None';
    case 'dtype':
      return `torch.${v.dtype}`;
    case 'tuple': {
      const inner = v.items.map(reprValue);
      if (v.size) return `torch.Size([${inner.join(', ')}])`;
      return inner.length === 1 ? `(${inner[0]},)` : `(${inner.join(', ')})`;
    }
    case 'tensor':
      return `<tensor ${v.id}>`;
  }
}

const commas = (n: number) => n.toLocaleString('en-US');

/** What `x` alone prints: PyTorch's repr without the values (the device is shape-only), then
 * where its memory is, in short lines that fit the console. */
export function tensorRepr(info: NativeTensorInfo, device: string, sharedWith: string[]): string {
  const shape = info.shape.length === 1 ? `(${info.shape[0]},)` : `(${info.shape.join(', ')})`;
  const lines = [`tensor(shape=${shape}, dtype=torch.${info.dtype}, device='${device}')`];
  const what = [`${commas(info.bytes)} bytes`];
  if (info.isView) what.push('a view');
  if (!info.contiguous) what.push('not contiguous');
  lines.push(`# ${what.join(', ')}`);
  lines.push(
    info.storageBytes === 0
      ? '# no storage (zero elements)'
      : `# storage ${commas(info.storageBytes)} B in a ${commas(info.blockBytes)} B block at 0x${info.address.toString(16)}`,
  );
  if (sharedWith.length) lines.push(`# storage shared with ${sharedWith.join(', ')}`);
  return lines.join('\n');
}

// The canonical encoding of a decoded pickle that test/fixtures/snapshot/make_fixtures.py
// hashes on the Python side: comparing SHA-256s compares our view with Python's exactly
// (types, tuple vs list, dict order and key types, big ints, float bits).
import { createHash } from 'node:crypto';
import { PyFloat, PySet, PyTuple, type PickleValue } from '../../main/snapshot/pickle/values';

function canon(v: PickleValue, out: Buffer[]): void {
  if (v === null) out.push(Buffer.from('N'));
  else if (v === true) out.push(Buffer.from('T'));
  else if (v === false) out.push(Buffer.from('F'));
  else if (typeof v === 'bigint') out.push(Buffer.from(`i${v};`));
  else if (typeof v === 'number' || v instanceof PyFloat) {
    const n = typeof v === 'number' ? v : v.value;
    if (Number.isInteger(n) && Math.abs(n) <= Number.MAX_SAFE_INTEGER && !Object.is(n, -0)) out.push(Buffer.from(`i${n};`));
    else {
      const b = Buffer.alloc(8);
      b.writeDoubleBE(n);
      out.push(Buffer.from(`f${b.toString('hex')};`));
    }
  } else if (typeof v === 'string') {
    const b = Buffer.from(v, 'utf8');
    out.push(Buffer.from(`s${b.length}:`), b);
  } else if (v instanceof Uint8Array) out.push(Buffer.from(`b${Buffer.from(v).toString('hex')};`));
  else if (Array.isArray(v)) {
    out.push(Buffer.from(`l${v.length}[`));
    for (const x of v) canon(x, out);
    out.push(Buffer.from(']'));
  } else if (v instanceof PyTuple) {
    out.push(Buffer.from(`t${v.items.length}(`));
    for (const x of v.items) canon(x, out);
    out.push(Buffer.from(')'));
  } else if (v instanceof PySet) {
    const parts = v.items.map((x) => canonBytes(x)).sort(Buffer.compare);
    out.push(Buffer.from(`${v.frozen ? 'Z' : 'S'}${v.items.length}<`), ...parts, Buffer.from('>'));
  } else {
    out.push(Buffer.from(`d${v.size}{`));
    for (const [k, x] of v) {
      canon(k, out);
      canon(x, out);
    }
    out.push(Buffer.from('}'));
  }
}

export function canonBytes(v: PickleValue): Buffer {
  const out: Buffer[] = [];
  canon(v, out);
  return Buffer.concat(out);
}

export function digest(v: PickleValue): string {
  return createHash('sha256').update(canonBytes(v)).digest('hex');
}

// The pickle memo. MEMOIZE (protocol 4) and CPython's PUTs number entries 0, 1, 2... so
// they live in an array (a trace of millions of events stores and reads millions of them:
// a Map's hashing was the largest cost of a streamed read); an index out of that sequence
// (PUT 4000000000) goes to a Map. Invariant: the Map only holds indices >= the array's
// length, so each index has one place. An entry a hook released leaves an empty slot
// (8 bytes; at most one per MEMOIZE byte of input).
import type { PickleValue } from './values';

export class Memo {
  private readonly dense: (PickleValue | undefined)[] = [];
  private readonly sparse = new Map<number, PickleValue>();
  /** Entries held (released ones not counted). */
  size = 0;

  get(idx: number): PickleValue | undefined {
    return idx < this.dense.length ? this.dense[idx] : this.sparse.get(idx);
  }

  has(idx: number): boolean {
    return this.get(idx) !== undefined;
  }

  set(idx: number, v: PickleValue): void {
    const d = this.dense;
    if (idx < d.length) {
      if (d[idx] === undefined) this.size++;
      d[idx] = v;
    } else if (idx === d.length) {
      // The index joins the array: a Map entry for it moves (replaced by v).
      if (this.sparse.size && this.sparse.delete(idx)) this.size--;
      d.push(v);
      this.size++;
    } else {
      if (!this.sparse.has(idx)) this.size++;
      this.sparse.set(idx, v);
    }
  }

  /** An index stored and released at once (a trace event the fast path consumed): a hole. */
  skip(idx: number): void {
    if (idx === this.dense.length) this.dense.push(undefined);
    else this.delete(idx);
  }

  delete(idx: number): void {
    const d = this.dense;
    if (idx < d.length) {
      if (d[idx] !== undefined) this.size--;
      d[idx] = undefined;
    } else if (this.sparse.delete(idx)) this.size--;
  }
}

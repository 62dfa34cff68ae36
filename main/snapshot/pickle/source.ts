// Where the reader's bytes come from: a Buffer already in memory (read in place, never
// copied) or a file read in fixed-size chunks, so a snapshot of hundreds of MB never has
// to sit in memory as one block. Both expose the same window: `buf[i]` is the byte at
// absolute offset `base + i`, and `ensure(n)` makes the next n bytes contiguous in `buf`.
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';

export interface ByteSource {
  /** The current window. Its contents are only valid until the next ensure(). */
  buf: Buffer;
  /** Absolute offset of buf[0]. */
  base: number;
  /** Index in buf of the next unread byte. */
  i: number;
  /** Number of valid bytes in buf. */
  end: number;
  /** Total input length in bytes. */
  readonly length: number;
  /** Make at least n bytes available from buf[i]; false if the input has fewer left. */
  ensure(n: number): boolean;
  close(): void;
}

export function bufferSource(data: Uint8Array): ByteSource {
  // A Buffer view over the same memory: no copy.
  const buf = Buffer.isBuffer(data) ? data : Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  return {
    buf,
    base: 0,
    i: 0,
    end: buf.length,
    length: buf.length,
    ensure(n) {
      return this.end - this.i >= n;
    },
    close() {},
  };
}

export const DEFAULT_CHUNK = 1 << 20;

export function fileSource(path: string, chunk = DEFAULT_CHUNK): ByteSource {
  const fd = openSync(path, 'r');
  let length: number;
  try {
    length = fstatSync(fd).size;
  } catch (err) {
    closeSync(fd);
    throw err;
  }
  let closed = false;
  const src: ByteSource = {
    buf: Buffer.allocUnsafe(Math.min(chunk, Math.max(length, 1))),
    base: 0,
    i: 0,
    end: 0,
    length,
    ensure(n) {
      if (this.end - this.i >= n) return true;
      const absolute = this.base + this.i;
      if (length - absolute < n) return false;
      // Slide the unread tail to the front (growing the window only for an item larger
      // than a chunk), then fill the rest from the file.
      const keep = this.end - this.i;
      const want = Math.max(n, Math.min(chunk, length - absolute));
      let target = this.buf;
      if (want > this.buf.length) target = Buffer.allocUnsafe(want);
      else if (this.buf.length > chunk && want <= chunk) target = Buffer.allocUnsafe(chunk); // shrink after a big item
      this.buf.copy(target, 0, this.i, this.end);
      this.buf = target;
      this.base = absolute;
      this.i = 0;
      this.end = keep;
      while (this.end < want) {
        const got = readSync(fd, this.buf, this.end, Math.min(this.buf.length, want) - this.end, this.base + this.end);
        if (got <= 0) break;
        this.end += got;
      }
      return this.end >= n;
    },
    close() {
      if (!closed) {
        closed = true;
        closeSync(fd);
      }
    },
  };
  return src;
}

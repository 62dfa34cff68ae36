// Where the host keeps uploaded snapshots: chunks being received, then parsed snapshots
// under an id, least recently used evicted first once the byte or count cap is passed.
// The cap counts pickle bytes (a parsed snapshot takes a few times that in memory).
import { randomUUID } from 'node:crypto';
import { SNAPSHOT_MAX_FILE_BYTES } from '../contract/snapshot';
import type { Snapshot } from '../snapshot/model';

export interface StoreLimits {
  /**
   * Most pickle bytes held across snapshots (the newest is kept even when it alone is
   * larger). A parsed snapshot takes several times its pickle's bytes.
   */
  maxBytes: number;
  maxEntries: number;
  /** Most uploads in progress at once; the oldest is dropped for a new one. */
  maxUploads: number;
  /** An upload with no chunk for this long is dropped. */
  uploadIdleMs: number;
}

export const DEFAULT_STORE_LIMITS: StoreLimits = {
  maxBytes: SNAPSHOT_MAX_FILE_BYTES,
  maxEntries: 8,
  maxUploads: 4,
  uploadIdleMs: 10 * 60_000,
};

interface Upload {
  name: string;
  total: number;
  chunks: (Buffer | undefined)[];
  received: number;
  bytes: number;
  touched: number;
}

export interface StoredSnapshot<Extra> {
  id: string;
  name: string;
  bytes: number;
  snapshot: Snapshot;
  /** Views and replays computed once per snapshot (per device). */
  extra: Extra;
}

export class UploadError extends Error {
  override name = 'UploadError';
}

export class SnapshotStore<Extra> {
  private readonly uploads = new Map<string, Upload>();
  /** Map order is recency: the first entry is the least recently used. */
  private readonly entries = new Map<string, StoredSnapshot<Extra>>();
  readonly limits: StoreLimits;

  constructor(
    limits: Partial<StoreLimits> = {},
    private readonly now: () => number = Date.now,
  ) {
    this.limits = { ...DEFAULT_STORE_LIMITS, ...limits };
  }

  /**
   * Takes one chunk; returns the whole file once every chunk has arrived (the upload is
   * then forgotten), else null. Chunks may arrive in any order; a repeated one replaces.
   */
  addChunk(uploadId: string, index: number, total: number, data: Buffer, name: string): Buffer | null {
    this.dropIdleUploads();
    let up = this.uploads.get(uploadId);
    if (up && up.total !== total) {
      this.uploads.delete(uploadId);
      throw new UploadError(`upload ${uploadId}: chunk ${index} says ${total} chunks, earlier chunks said ${up.total}; upload dropped`);
    }
    if (!up) {
      while (this.uploads.size >= this.limits.maxUploads) this.uploads.delete(this.uploads.keys().next().value!);
      up = { name, total, chunks: new Array(total), received: 0, bytes: 0, touched: 0 };
      this.uploads.set(uploadId, up);
    }
    const old = up.chunks[index];
    if (old) up.bytes -= old.length;
    else up.received++;
    up.chunks[index] = data;
    up.bytes += data.length;
    up.touched = this.now();
    if (up.bytes > SNAPSHOT_MAX_FILE_BYTES) {
      this.uploads.delete(uploadId);
      throw new UploadError(`upload ${uploadId}: the file is larger than ${SNAPSHOT_MAX_FILE_BYTES} bytes; upload dropped`);
    }
    if (up.received < up.total) return null;
    this.uploads.delete(uploadId);
    return Buffer.concat(up.chunks as Buffer[], up.bytes);
  }

  progress(uploadId: string): { received: number; total: number } | null {
    const up = this.uploads.get(uploadId);
    return up ? { received: up.received, total: up.total } : null;
  }

  uploadName(uploadId: string): string | null {
    return this.uploads.get(uploadId)?.name ?? null;
  }

  add(name: string, bytes: number, snapshot: Snapshot, extra: Extra): StoredSnapshot<Extra> {
    const entry: StoredSnapshot<Extra> = { id: randomUUID().replace(/-/g, '').slice(0, 16), name, bytes, snapshot, extra };
    this.entries.set(entry.id, entry);
    this.evict(entry.id);
    return entry;
  }

  /** The snapshot, marked as just used; a clear error when unknown or evicted. */
  get(id: string): StoredSnapshot<Extra> {
    const e = this.entries.get(id);
    if (!e) throw new Error(`no open snapshot "${id}" (closed, or evicted to make room for newer ones): open the file again`);
    this.entries.delete(id);
    this.entries.set(id, e);
    return e;
  }

  has(id: string): boolean {
    return this.entries.has(id);
  }

  delete(id: string): boolean {
    return this.entries.delete(id);
  }

  /** Most recently used first. */
  list(): StoredSnapshot<Extra>[] {
    return [...this.entries.values()].reverse();
  }

  clear(): void {
    this.entries.clear();
    this.uploads.clear();
  }

  get totalBytes(): number {
    let n = 0;
    for (const e of this.entries.values()) n += e.bytes;
    return n;
  }

  private evict(keep: string): void {
    for (const id of this.entries.keys()) {
      if (this.entries.size <= this.limits.maxEntries && this.totalBytes <= this.limits.maxBytes) break;
      if (id !== keep) this.entries.delete(id);
    }
  }

  private dropIdleUploads(): void {
    const cutoff = this.now() - this.limits.uploadIdleMs;
    for (const [id, up] of this.uploads) if (up.touched < cutoff) this.uploads.delete(id);
  }
}

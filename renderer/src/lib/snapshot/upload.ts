// Sends a snapshot file to the host in chunks: one message is capped at 1 MiB on both
// transports, so the file goes as 384 KiB slices, base64 each (512 KiB of text).
import { SNAPSHOT_CHUNK_BYTES, SNAPSHOT_MAX_FILE_BYTES, type SnapSummary } from '$contract/snapshot';
import { call, type Transport } from '../../transport/transport';

/** What a File, or anything sliceable with a name, offers. */
export interface SnapshotSource {
  name: string;
  size: number;
  slice(start: number, end: number): Blob;
}

/** A slice's bytes: Blob.arrayBuffer where the engine has it, FileReader elsewhere. */
function readBlob(b: Blob): Promise<ArrayBuffer> {
  if (typeof b.arrayBuffer === 'function') return b.arrayBuffer();
  return new Promise((resolve, reject) => {
    const r = new FileReader();
    r.onload = () => resolve(r.result as ArrayBuffer);
    r.onerror = () => reject(r.error ?? new Error('could not read the file'));
    r.readAsArrayBuffer(b);
  });
}

export function toBase64(bytes: Uint8Array): string {
  let s = '';
  for (let at = 0; at < bytes.length; at += 0x8000) s += String.fromCharCode(...bytes.subarray(at, at + 0x8000));
  return btoa(s);
}

function newUploadId(): string {
  return `up-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 10)}`;
}

/** Thrown when the caller's signal stops an upload between chunks. */
export class UploadCancelled extends Error {
  override name = 'UploadCancelled';
}

/** Sends `file`; `signal` stops it before the next chunk (the host drops a partial upload once
 *  it has been idle). The last chunk's reply waits for the host's decode, which runs to its end. */
export async function uploadSnapshot(
  t: Transport,
  file: SnapshotSource,
  onProgress?: (sent: number, total: number) => void,
  signal?: AbortSignal,
): Promise<SnapSummary> {
  if (file.size === 0) throw new Error(`${file.name} is empty`);
  if (file.size > SNAPSHOT_MAX_FILE_BYTES) throw new Error(`${file.name} is larger than vramlab opens (1 GiB)`);
  const total = Math.ceil(file.size / SNAPSHOT_CHUNK_BYTES);
  const uploadId = newUploadId();
  for (let index = 0; index < total; index++) {
    if (signal?.aborted) throw new UploadCancelled(`opening ${file.name} was cancelled after ${index} of ${total} chunks`);
    const start = index * SNAPSHOT_CHUNK_BYTES;
    const bytes = new Uint8Array(await readBlob(file.slice(start, Math.min(file.size, start + SNAPSHOT_CHUNK_BYTES))));
    const r = await call(t, 'snapshot.upload', { uploadId, index, total, chunk: toBase64(bytes), name: file.name.slice(0, 256) });
    onProgress?.(index + 1, total);
    if (r.done) return r.snapshot;
  }
  throw new Error(`the host did not finish reading ${file.name}`);
}

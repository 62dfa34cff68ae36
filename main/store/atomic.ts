// Crash-safe file writes: temp file in the same folder, fsync, rename over the target,
// fsync the folder. A reader sees the old file or the new one, never half of either.
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { ownedName } from './leftovers';

export const TMP_MARK = '.tmp-';

export async function writeFileAtomic(file: string, data: string | Uint8Array): Promise<void> {
  const dir = path.dirname(file);
  const tmp = path.join(dir, ownedName(TMP_MARK, path.basename(file)));
  const handle = await fs.open(tmp, 'w', 0o644);
  try {
    try {
      await handle.writeFile(data);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await fs.rename(tmp, file);
  } catch (err) {
    // A full disk fails the write: leave no half-written temp behind to hold space.
    await fs.rm(tmp, { force: true }).catch(() => {});
    throw err;
  }
  await syncDir(dir);
}

export async function writeJsonAtomic(file: string, value: unknown): Promise<void> {
  await writeFileAtomic(file, JSON.stringify(value));
}

/** Makes a rename or create inside `dir` durable. Some platforms cannot open folders; then it is a no-op. */
export async function syncDir(dir: string): Promise<void> {
  let handle: fs.FileHandle | undefined;
  try {
    handle = await fs.open(dir, 'r');
    await handle.sync();
  } catch {
    /* Windows: folders cannot be fsynced; NTFS journals the rename */
  } finally {
    await handle?.close();
  }
}

export async function readJson<T>(file: string): Promise<T> {
  return JSON.parse(await fs.readFile(file, 'utf8')) as T;
}

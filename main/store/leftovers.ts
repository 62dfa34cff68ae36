// Which temp and trash entries start-up recovery may remove. The app and the CLI can have
// the same store open at once, so a `.tmp-` file may be another live process's write in
// progress. Every temp name carries its owner's pid ("<mark><what>-<pid>-<hex>"); an entry
// is abandoned only when that pid is gone *and* the entry is older than a grace period
// (the age covers a home shared with another machine, where our pid check means nothing).
// Entries without an owner (older versions) go only when older than STALE_MS.
import { promises as fs } from 'node:fs';
import { randomBytes } from 'node:crypto';

/** Long enough for any single atomic write or delete to finish. */
export const DEFAULT_GRACE_MS = 60_000;
/** Nothing vramlab writes stays a temp this long, whoever owns it. */
export const STALE_MS = 24 * 3600_000;

/** A fresh temp/trash name owned by this process. */
export function ownedName(mark: string, what: string): string {
  return `${mark}${what}-${process.pid}-${randomBytes(4).toString('hex')}`;
}

/** The owning pid encoded in a name from ownedName, or null for a name without one. */
export function ownerOf(name: string): number | null {
  const m = /-(\d{1,10})-[0-9a-f]{8}$/.exec(name);
  return m ? Number(m[1]) : null;
}

export function isAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** True when `full` (named `name`) can no longer be finished by anyone. */
export async function isAbandoned(full: string, name: string, graceMs: number, now = Date.now()): Promise<boolean> {
  let age: number;
  try {
    age = now - (await fs.lstat(full)).mtimeMs;
  } catch {
    return false; // already gone (its owner finished it)
  }
  if (age >= STALE_MS) return true;
  const owner = ownerOf(name);
  if (owner === null || owner === process.pid) return false;
  return !isAlive(owner) && age >= graceMs;
}

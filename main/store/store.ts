// The run store: one folder per run under <home>/runs, every file written atomically.
//   runs/<id>/meta.json          id, name, status, spec, summary (the commit point)
//   runs/<id>/chunks/NNNNNN.json  {samples, events} appended while the run goes
// A run folder appears only once its first meta.json is durable (built under .tmp-<id>,
// then renamed); deletion renames to .trash-<id> first. Opening the store marks runs
// whose owning process is gone as interrupted and sweeps temp leftovers.
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import type { MemorySample, RunEvent, RunGroup, RunMeta, RunRecord, RunStatus, RunSummary } from '../contract/runs';
import type { Spec } from '../contract/spec';
import { modelName } from '../contract/catalogue';
import { readJson, syncDir, TMP_MARK, writeJsonAtomic } from './atomic';
import { RunWriter } from './writer';

const ID_RE = /^\d{8}-\d{6}-[0-9a-f]{6}$/;
const TRASH_MARK = '.trash-';

export class RunNotFoundError extends Error {
  constructor(id: string) {
    super(`no run "${id}"`);
  }
}

export interface CreateOptions {
  name?: string;
  group?: RunGroup | null;
}

export class RunStore {
  readonly dir: string;

  private constructor(readonly home: string) {
    this.dir = path.join(home, 'runs');
  }

  /** Opens (creating if needed) the store under `home` and recovers after a crash. */
  static async open(home: string): Promise<RunStore> {
    const store = new RunStore(home);
    await fs.mkdir(store.dir, { recursive: true });
    await store.recover();
    return store;
  }

  async create(spec: Spec, opts: CreateOptions = {}): Promise<RunWriter> {
    const id = newRunId();
    const now = new Date().toISOString();
    const meta: RunMeta = {
      id,
      name: sanitizeName(opts.name) || defaultName(spec),
      created: now,
      updated: now,
      status: 'running',
      device: spec.device,
      spec,
      group: opts.group ?? null,
      pid: process.pid,
      hostname: os.hostname(),
      summary: null,
    };
    const staging = path.join(this.dir, `${TMP_MARK}${id}`);
    await fs.mkdir(path.join(staging, 'chunks'), { recursive: true });
    await writeJsonAtomic(path.join(staging, 'meta.json'), meta);
    await fs.rename(staging, this.runDir(id));
    await syncDir(this.dir);
    return new RunWriter(this.runDir(id), meta);
  }

  /** Every run, newest first. Unreadable folders are skipped, never fatal. */
  async list(): Promise<RunMeta[]> {
    const names = await fs.readdir(this.dir);
    const metas: RunMeta[] = [];
    for (const name of names) {
      if (!ID_RE.test(name)) continue;
      try {
        metas.push(await readJson<RunMeta>(path.join(this.dir, name, 'meta.json')));
      } catch {
        /* a folder without a readable meta.json is not a run */
      }
    }
    return metas.sort((a, b) => (a.created < b.created ? 1 : a.created > b.created ? -1 : b.id.localeCompare(a.id)));
  }

  async meta(id: string): Promise<RunMeta> {
    checkId(id);
    try {
      return await readJson<RunMeta>(path.join(this.runDir(id), 'meta.json'));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw new RunNotFoundError(id);
      throw err;
    }
  }

  async get(id: string): Promise<RunRecord> {
    const meta = await this.meta(id);
    const { timeline, events } = await readChunks(path.join(this.runDir(id), 'chunks'));
    return { meta, timeline, events };
  }

  async rename(id: string, name: string): Promise<RunMeta> {
    const clean = sanitizeName(name);
    if (!clean) throw new Error('a run name must have at least one visible character');
    const meta = await this.meta(id);
    const next = { ...meta, name: clean, updated: new Date().toISOString() };
    await writeJsonAtomic(path.join(this.runDir(id), 'meta.json'), next);
    return next;
  }

  async delete(id: string): Promise<void> {
    checkId(id);
    const trash = path.join(this.dir, `${TRASH_MARK}${id}-${randomBytes(3).toString('hex')}`);
    try {
      await fs.rename(this.runDir(id), trash);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw new RunNotFoundError(id);
      throw err;
    }
    await syncDir(this.dir);
    await fs.rm(trash, { recursive: true, force: true });
  }

  private runDir(id: string): string {
    return path.join(this.dir, id);
  }

  private async recover(): Promise<void> {
    const host = os.hostname();
    for (const name of await fs.readdir(this.dir)) {
      const full = path.join(this.dir, name);
      if (name.startsWith(TMP_MARK) || name.startsWith(TRASH_MARK)) {
        await fs.rm(full, { recursive: true, force: true });
        continue;
      }
      if (!ID_RE.test(name)) continue;
      await sweepTemps(full);
      await sweepTemps(path.join(full, 'chunks'));
      let meta: RunMeta;
      try {
        meta = await readJson<RunMeta>(path.join(full, 'meta.json'));
      } catch {
        continue;
      }
      if (meta.status !== 'running') continue;
      if (meta.hostname === host && isAlive(meta.pid)) continue; // someone is still writing it
      const next: RunMeta = { ...meta, status: 'interrupted' as RunStatus, updated: new Date().toISOString() };
      await writeJsonAtomic(path.join(full, 'meta.json'), next);
    }
  }
}

export function isRunId(id: unknown): id is string {
  return typeof id === 'string' && ID_RE.test(id);
}

function checkId(id: string): void {
  if (!isRunId(id)) throw new RunNotFoundError(String(id).slice(0, 64));
}

function newRunId(): string {
  const d = new Date();
  const p = (n: number, w = 2) => String(n).padStart(w, '0');
  const date = `${d.getFullYear()}${p(d.getMonth() + 1)}${p(d.getDate())}`;
  const time = `${p(d.getHours())}${p(d.getMinutes())}${p(d.getSeconds())}`;
  return `${date}-${time}-${randomBytes(3).toString('hex')}`;
}

function sanitizeName(name: string | undefined): string {
  // Control characters would break tables and CSV viewers; names stay one line.
  return (name ?? '').replace(/[\u0000-\u001f\u007f]/g, ' ').trim().slice(0, 200);
}

function defaultName(spec: Spec): string {
  return `${modelName(spec.model)} b${spec.batch} ${spec.mode === 'train' ? spec.optimizer.kind : spec.mode}`;
}

function isAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function sweepTemps(dir: string): Promise<void> {
  let names: string[];
  try {
    names = await fs.readdir(dir);
  } catch {
    return;
  }
  for (const n of names) if (n.startsWith(TMP_MARK)) await fs.rm(path.join(dir, n), { force: true });
}

async function readChunks(dir: string): Promise<{ timeline: MemorySample[]; events: RunEvent[] }> {
  const timeline: MemorySample[] = [];
  const events: RunEvent[] = [];
  let names: string[] = [];
  try {
    names = (await fs.readdir(dir)).filter((n) => /^\d{6}\.json$/.test(n)).sort();
  } catch {
    /* no chunks yet */
  }
  for (const n of names) {
    const chunk = await readJson<{ samples?: MemorySample[]; events?: RunEvent[] }>(path.join(dir, n));
    for (const s of chunk.samples ?? []) timeline.push(s);
    for (const e of chunk.events ?? []) events.push(e);
  }
  return { timeline, events };
}

export type { RunSummary };

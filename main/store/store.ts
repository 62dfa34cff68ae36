// The run store: one folder per run under <home>/runs, every file written atomically.
//   runs/<id>/meta.json          id, name, status, spec, summary (the commit point)
//   runs/<id>/chunks/NNNNNN.json  {samples, events} appended while the run goes
// A run folder appears only once its first meta.json is durable (built under .tmp-<id>-<pid>-..,
// then renamed); deletion renames to .trash-<id>-<pid>-.. first. Opening the store marks runs
// whose owning process is gone as interrupted and sweeps temp leftovers that are provably
// abandoned (leftovers.ts: the app and the CLI may share the store). Recovery never fails the
// open: on a full disk (ENOSPC) the store must still list and delete runs, which is how space is
// made again; what it could not do is kept in `recoveryProblems`.
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import type { MemorySample, RunEvent, RunGroup, RunMeta, RunRecord, RunStatus, RunSummary } from '../contract/runs';
import type { Spec } from '../contract/spec';
import { modelName } from '../contract/catalogue';
import { readJson, syncDir, TMP_MARK, writeJsonAtomic } from './atomic';
import { CHUNK_ITEMS, RunWriter } from './writer';
import { EventThinner, HISTORY_CAP, SampleDecimator } from './decimate';
import { metaProblem } from './meta_check';
import { DEFAULT_GRACE_MS, isAbandoned, isAlive, ownedName } from './leftovers';

const ID_RE = /^\d{8}-\d{6}-[0-9a-f]{6}$/;
const TRASH_MARK = '.trash-';

export class RunNotFoundError extends Error {
  constructor(id: string) {
    super(`no run "${id}"`);
  }
}

/** A run folder whose meta.json could not be used: listed apart, never fatal. */
export interface DamagedRun {
  id: string;
  problem: string;
}

export interface OpenOptions {
  /** How old a dead process's temp file must be before recovery removes it. */
  tempGraceMs?: number;
}

export interface CreateOptions {
  name?: string;
  group?: RunGroup | null;
}

export class RunStore {
  readonly dir: string;
  /** What start-up recovery could not do (a full disk, a read-only folder): one line each. */
  readonly recoveryProblems: string[] = [];
  /** Runs recovery found orphaned but could not rewrite: shown as interrupted all the same. */
  private readonly orphaned = new Set<string>();

  private constructor(
    readonly home: string,
    private readonly graceMs: number,
  ) {
    this.dir = path.join(home, 'runs');
  }

  /** Opens (creating if needed) the store under `home` and recovers after a crash. */
  static async open(home: string, opts: OpenOptions = {}): Promise<RunStore> {
    const store = new RunStore(home, opts.tempGraceMs ?? DEFAULT_GRACE_MS);
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
    const staging = path.join(this.dir, ownedName(TMP_MARK, id));
    await fs.mkdir(path.join(staging, 'chunks'), { recursive: true });
    await writeJsonAtomic(path.join(staging, 'meta.json'), meta);
    await fs.rename(staging, this.runDir(id));
    await syncDir(this.dir);
    return new RunWriter(this.runDir(id), meta);
  }

  /** Every run, newest first. Runs whose meta.json is unreadable or damaged are left out. */
  async list(): Promise<RunMeta[]> {
    return (await this.scan()).runs;
  }

  /** Every usable run, newest first, and each run folder that had to be skipped, and why. */
  async scan(): Promise<{ runs: RunMeta[]; damaged: DamagedRun[] }> {
    const names = await fs.readdir(this.dir);
    const runs: RunMeta[] = [];
    const damaged: DamagedRun[] = [];
    for (const name of names) {
      if (!ID_RE.test(name)) continue;
      const got = await readMeta(path.join(this.dir, name), name);
      if ('problem' in got) damaged.push({ id: name, problem: got.problem });
      else runs.push(this.asRecovered(got.meta));
    }
    runs.sort((a, b) => (a.created < b.created ? 1 : a.created > b.created ? -1 : b.id.localeCompare(a.id)));
    return { runs, damaged: damaged.sort((a, b) => a.id.localeCompare(b.id)) };
  }

  async meta(id: string): Promise<RunMeta> {
    checkId(id);
    const got = await readMeta(this.runDir(id), id);
    if ('meta' in got) return this.asRecovered(got.meta);
    if (got.missing) throw new RunNotFoundError(id);
    throw new Error(`run ${id} is damaged: ${got.problem}`);
  }

  /**
   * A run with its timeline. With maxSamples (maxEvents), a run stored with more samples
   * (events) than that, one written before timelines were decimated or history capped
   * (hundreds of MB), is decimated while it is read, peaks kept, so the reply stays bounded
   * whatever is on disk; `decimated` then gives the counts on disk.
   */
  async get(id: string, opts: { maxSamples?: number; maxEvents?: number } = {}): Promise<RunRecord> {
    const meta = await this.meta(id);
    const dir = path.join(this.runDir(id), 'chunks');
    const names = await chunkNames(dir);
    const maxS = opts.maxSamples ?? Infinity;
    const maxE = opts.maxEvents ?? Infinity;
    // A run stored with the history cap (summary.history) holds no more events than the cap.
    const items = names.length * CHUNK_ITEMS;
    if (items <= maxS && (items <= maxE || (meta.summary?.history && maxE >= HISTORY_CAP)))
      return { meta, ...(await readChunks(dir, names)) };
    let samples = 0;
    let events = 0;
    for await (const c of eachChunk(dir, names)) {
      samples += c.samples.length;
      events += c.events.length;
    }
    if (samples <= maxS && events <= maxE) return { meta, ...(await readChunks(dir, names)) };
    // 2 picks per bucket at most; within the bounds, everything is kept.
    const keep = samples > maxS ? new SampleDecimator(Infinity, Math.ceil((2 * samples) / maxS)) : new SampleDecimator(Infinity, 1);
    const thin = new EventThinner(samples > maxS ? Math.max(1, Math.floor(maxS / 8)) : Infinity, maxE);
    const timeline: MemorySample[] = [];
    const evs: RunEvent[] = [];
    for await (const c of eachChunk(dir, names)) {
      for (const s of keep.push(c.samples)) timeline.push(s);
      for (const e of thin.push(c.events)) evs.push(e);
    }
    for (const s of keep.flush()) timeline.push(s);
    return { meta, timeline, events: evs, decimated: { samples, events } };
  }

  /** A run's chunks one at a time, in order: exports stream a run of any size through this. */
  async *chunks(id: string): AsyncGenerator<{ samples: MemorySample[]; events: RunEvent[] }> {
    await this.meta(id);
    const dir = path.join(this.runDir(id), 'chunks');
    yield* eachChunk(dir, await chunkNames(dir));
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
    const trash = path.join(this.dir, ownedName(TRASH_MARK, id));
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

  private asRecovered(meta: RunMeta): RunMeta {
    return meta.status === 'running' && this.orphaned.has(meta.id) ? { ...meta, status: 'interrupted' } : meta;
  }

  private async recover(): Promise<void> {
    for (const name of await fs.readdir(this.dir)) {
      try {
        await this.recoverEntry(name);
      } catch (err) {
        // One entry's failure (ENOSPC rewriting a meta.json) costs only that entry, and only now.
        const code = (err as NodeJS.ErrnoException).code;
        this.recoveryProblems.push(`recovery skipped ${name}: ${code ?? (err instanceof Error ? err.message : String(err))}`);
      }
    }
  }

  private async recoverEntry(name: string): Promise<void> {
    const full = path.join(this.dir, name);
    if (name.startsWith(TMP_MARK) || name.startsWith(TRASH_MARK)) {
      // Another process may be building or deleting this run right now.
      if (await isAbandoned(full, name, this.graceMs)) await fs.rm(full, { recursive: true, force: true });
      return;
    }
    if (!ID_RE.test(name)) return;
    await sweepTemps(full, this.graceMs);
    await sweepTemps(path.join(full, 'chunks'), this.graceMs);
    const got = await readMeta(full, name);
    if (!('meta' in got)) return; // damaged: list() reports it, recovery leaves it as is
    const meta = got.meta;
    if (meta.status !== 'running') return;
    if (meta.hostname === os.hostname() && isAlive(meta.pid)) return; // someone is still writing it
    this.orphaned.add(meta.id);
    const next: RunMeta = { ...meta, status: 'interrupted' as RunStatus, updated: new Date().toISOString() };
    await writeJsonAtomic(path.join(full, 'meta.json'), next);
    this.orphaned.delete(meta.id);
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
  return (
    (name ?? '')
      // eslint-disable-next-line no-control-regex -- matching control characters is the point
      .replace(/[\u0000-\u001f\u007f]/g, ' ')
      .trim()
      .slice(0, 200)
  );
}

/** "llama 2048x22 LoRA r8 b8 adamw bf16": the model, how it is tuned, batch, what it does, dtype. */
function defaultName(spec: Spec): string {
  // "Qwen2.5-0.5B seq 2048 LoRA r16 b8 adamw bf16 fsdp2 x8": the fine-tuning method says what trains.
  return [
    modelName(spec.model),
    finetuneName(spec),
    `b${spec.batch}`,
    spec.mode === 'train' ? spec.optimizer.kind : spec.mode,
    spec.precision,
    spec.parallel ? `${spec.parallel.kind} x${spec.parallel.world}` : '',
  ]
    .filter(Boolean)
    .join(' ');
}

function finetuneName(spec: Pick<Spec, 'finetune'>): string {
  const f = spec.finetune;
  if (!f || f.method === 'full') return '';
  return f.method === 'lora' ? `LoRA r${f.rank}` : `freeze ${f.blocks}`;
}

async function sweepTemps(dir: string, graceMs: number): Promise<void> {
  let names: string[];
  try {
    names = await fs.readdir(dir);
  } catch {
    return;
  }
  for (const n of names) {
    const full = path.join(dir, n);
    if (n.startsWith(TMP_MARK) && (await isAbandoned(full, n, graceMs))) await fs.rm(full, { force: true });
  }
}

type MetaRead = { meta: RunMeta } | { problem: string; missing: boolean };

async function readMeta(dir: string, id: string): Promise<MetaRead> {
  let v: unknown;
  try {
    v = await readJson<unknown>(path.join(dir, 'meta.json'));
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return { problem: 'no meta.json', missing: true };
    return {
      problem:
        err instanceof SyntaxError ? `meta.json is not valid JSON (${err.message})` : `meta.json unreadable (${code ?? String(err)})`,
      missing: false,
    };
  }
  const problem = metaProblem(v, id);
  return problem ? { problem, missing: false } : { meta: v as RunMeta };
}

async function chunkNames(dir: string): Promise<string[]> {
  try {
    return (await fs.readdir(dir)).filter((n) => /^\d{6}\.json$/.test(n)).sort();
  } catch {
    return []; // no chunks yet
  }
}

async function* eachChunk(dir: string, names: readonly string[]): AsyncGenerator<{ samples: MemorySample[]; events: RunEvent[] }> {
  for (const n of names) {
    const c = await readJson<{ samples?: MemorySample[]; events?: RunEvent[] }>(path.join(dir, n));
    yield { samples: c.samples ?? [], events: c.events ?? [] };
  }
}

async function readChunks(dir: string, names: readonly string[]): Promise<{ timeline: MemorySample[]; events: RunEvent[] }> {
  const timeline: MemorySample[] = [];
  const events: RunEvent[] = [];
  for (const n of names) {
    const chunk = await readJson<{ samples?: MemorySample[]; events?: RunEvent[] }>(path.join(dir, n));
    for (const s of chunk.samples ?? []) timeline.push(s);
    for (const e of chunk.events ?? []) events.push(e);
  }
  return { timeline, events };
}

export type { RunSummary };

import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync, mkdirSync, existsSync } from 'node:fs';
import { spawn } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { buildSync } from 'esbuild';
import { RunStore, RunNotFoundError } from '../../main/store/store';
import { parseSpec } from '../../main/contract/spec';
import type { MemorySample, RunSummary } from '../../main/contract/runs';

const temps: string[] = [];
function tempHome(): string {
  const d = mkdtempSync(path.join(os.tmpdir(), 'vramlab-store-'));
  temps.push(d);
  return d;
}
afterEach(() => {
  while (temps.length) rmSync(temps.pop()!, { recursive: true, force: true });
});

const spec = parseSpec({ batch: 32 });
const sample = (t: number): MemorySample => ({ t, allocated: t, reserved: 2 * t, active: t, requested: t, by: [t, 0, 0, 0, 0, 0, 0, 0] });
const summary = (readings: Record<string, number>) => ({ status: 'done', readings }) as unknown as RunSummary;

describe('run store', () => {
  it('creates, lists, opens, renames and deletes runs', async () => {
    const store = await RunStore.open(tempHome());
    const a = await store.create(spec, { name: 'first' });
    a.append([sample(1), sample(2)], [{ type: 'phase', t: 1, edge: 'begin', name: 'forward', iteration: 0, micro_batch: 0, module: '' }]);
    await a.finish('done', summary({ params: 100 }));
    const b = await store.create(spec);
    await b.finish('oom', summary({ params: 7 }));

    const list = await store.list();
    expect(list.map((m) => m.id).sort()).toEqual([a.id, b.id].sort());
    const rec = await store.get(a.id);
    expect(rec.meta.name).toBe('first');
    expect(rec.meta.status).toBe('done');
    expect(rec.meta.summary?.readings).toEqual({ params: 100 });
    expect(rec.timeline.map((s) => s.t)).toEqual([1, 2]);
    expect(rec.events).toHaveLength(1);
    expect((await store.meta(b.id)).name).toMatch(/^mlp 1024-2048x2-10 b32 adam fp32$/);

    expect((await store.rename(a.id, '  renamed\nrun ')).name).toBe('renamed run');
    expect((await store.meta(a.id)).name).toBe('renamed run');
    await expect(store.rename(a.id, '   ')).rejects.toThrow(/visible character/);

    await store.delete(b.id);
    expect((await store.list()).map((m) => m.id)).toEqual([a.id]);
    await expect(store.get(b.id)).rejects.toBeInstanceOf(RunNotFoundError);
    await expect(store.delete(b.id)).rejects.toBeInstanceOf(RunNotFoundError);
  });

  it('refuses ids that are not run ids (no path traversal)', async () => {
    const store = await RunStore.open(tempHome());
    for (const id of ['../x', '..', '/etc/passwd', '20260101-000000-abcdeg', ''])
      await expect(store.get(id)).rejects.toBeInstanceOf(RunNotFoundError);
  });

  it('keeps a rename made while the run was going', async () => {
    const store = await RunStore.open(tempHome());
    const w = await store.create(spec, { name: 'before' });
    await store.rename(w.id, 'during');
    await w.finish('done', summary({}));
    expect((await store.meta(w.id)).name).toBe('during');
  });

  it('marks a run whose process died as interrupted, keeps its flushed samples, sweeps temp files', async () => {
    const home = tempHome();
    const store = await RunStore.open(home);
    const w = await store.create(spec);
    w.append([sample(1), sample(2), sample(3)], []);
    await w.flush();
    const metaFile = path.join(store.dir, w.id, 'meta.json');
    const meta = JSON.parse(readFileSync(metaFile, 'utf8'));
    writeFileSync(metaFile, JSON.stringify({ ...meta, pid: 2 ** 22 + 12345 })); // no such process
    // Temps owned by a process that no longer exists (names as leftovers.ts makes them).
    const gone = 2 ** 22 + 12345;
    writeFileSync(path.join(store.dir, w.id, 'chunks', `.tmp-000009.json-${gone}-000000aa`), '{"samp');
    mkdirSync(path.join(store.dir, `.tmp-20990101-000000-abcdef-${gone}-000000aa`));

    const reopened = await RunStore.open(home, { tempGraceMs: 0 });
    const rec = await reopened.get(w.id);
    expect(rec.meta.status).toBe('interrupted');
    expect(rec.timeline).toHaveLength(3);
    expect(readdirSync(path.join(store.dir, w.id, 'chunks'))).toEqual(['000001.json']);
    expect(existsSync(path.join(store.dir, `.tmp-20990101-000000-abcdef-${gone}-000000aa`))).toBe(false);
  });

  it('leaves a run of a live process alone', async () => {
    const home = tempHome();
    const store = await RunStore.open(home);
    const w = await store.create(spec);
    const again = await RunStore.open(home);
    expect((await again.meta(w.id)).status).toBe('running');
    await w.finish('done', summary({}));
  });
});

describe('run store crash safety', () => {
  let interruptedSeen = 0;
  let childJs = '';
  let childDir = '';
  afterAll(() => rmSync(childDir, { recursive: true, force: true }));
  beforeAll(() => {
    const dir = (childDir = mkdtempSync(path.join(os.tmpdir(), 'vramlab-child-')));
    childJs = path.join(dir, 'child.cjs');
    buildSync({
      entryPoints: [path.join(__dirname, 'store_crash_child.ts')],
      bundle: true,
      platform: 'node',
      format: 'cjs',
      outfile: childJs,
      logLevel: 'silent',
    });
  });

  // Each round kills the writer at a different moment: mid-chunk, mid-finish, mid-rename.
  it.each([35, 80, 150, 260, 410])('survives SIGKILL after %i ms of writing', async (delayMs) => {
    const home = tempHome();
    await RunStore.open(home); // runs/ exists before the child starts
    const child = spawn(process.execPath, [childJs, home], { stdio: ['ignore', 'pipe', 'pipe'] });
    const done = new Map<string, { samples: number; events: number }>();
    let started = '';
    let out = '';
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const lines = out.split('\n');
      out = lines.pop()!;
      for (const line of lines) {
        const [what, id, samples, events] = line.split(' ');
        if (what === 'started') started = id;
        if (what === 'done') done.set(id, { samples: Number(samples), events: Number(events) });
      }
    });
    // Wait for the first completed run, then let it write for delayMs more.
    await new Promise<void>((resolve, reject) => {
      const t0 = Date.now();
      const poll = setInterval(() => {
        if (done.size >= 1) {
          clearInterval(poll);
          resolve();
        } else if (Date.now() - t0 > 20_000 || child.exitCode !== null) {
          clearInterval(poll);
          reject(new Error(`child made no run: ${stderr}`));
        }
      }, 2);
    });
    await new Promise((r) => setTimeout(r, delayMs));
    // Wait for stdout to close too: a "started" line may still be in the pipe at exit.
    const exited = Promise.all([new Promise((r) => child.once('exit', r)), new Promise((r) => child.stdout.once('close', r))]);
    child.kill('SIGKILL');
    await exited;

    const store = await RunStore.open(home, { tempGraceMs: 0 }); // the writer is dead: no grace

    const list = await store.list();
    const byId = new Map(list.map((m) => [m.id, m]));
    // Every run the child reported finished is intact, with all of its data.
    for (const [id, want] of done) {
      const rec = await store.get(id);
      expect(rec.meta.status).toBe('done');
      expect(rec.timeline).toHaveLength(want.samples);
      expect(rec.events).toHaveLength(want.events);
      expect(rec.meta.summary?.readings).toBeDefined();
    }
    // Anything else that appeared is the interrupted one (or it finished but the report was
    // cut off): the last one reported started, or one created after the last report, when
    // the kill came between create() and its "started" line.
    const extra = list.filter((m) => !done.has(m.id));
    expect(extra.length).toBeLessThanOrEqual(1);
    for (const m of list) {
      if (done.has(m.id)) continue;
      if (m.id !== started) expect(done.has(started)).toBe(true);
      expect(['interrupted', 'done']).toContain(m.status);
      if (m.status === 'interrupted') interruptedSeen++;
      const rec = await store.get(m.id);
      for (let i = 1; i < rec.timeline.length; i++) expect(rec.timeline[i].t).toBe(rec.timeline[i - 1].t + 1);
    }
    expect(byId.size).toBeGreaterThanOrEqual(done.size);
    // No temp leftovers anywhere after recovery.
    for (const name of readdirSync(store.dir)) {
      expect(name.startsWith('.tmp-') || name.startsWith('.trash-')).toBe(false);
      for (const f of readdirSync(path.join(store.dir, name))) expect(f.startsWith('.tmp-')).toBe(false);
      for (const f of readdirSync(path.join(store.dir, name, 'chunks'))) expect(f.startsWith('.tmp-')).toBe(false);
    }
  });

  it('caught the writer mid-run in the rounds above', () => {
    expect(interruptedSeen).toBeGreaterThan(0);
  });
});

// The run store on a disk that cannot take another byte: start-up recovery wants to rewrite
// an orphaned run's meta.json, the write fails, and `vramlab runs list` / `runs delete` must
// still work (deleting runs is how the space comes back). Two real failures, through the real
// CLI in a second process: a full 1 MiB tmpfs (needs root and mount; skipped otherwise), and a
// file-size limit of 0 (`ulimit -f 0`: every write fails with EFBIG), which needs neither.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, openSync, readFileSync, rmSync, writeFileSync, writeSync, closeSync, readdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { RunStore } from '../../main/store/store';
import { parseSpec } from '../../main/contract/spec';

const root = path.resolve(__dirname, '../..');
const cliJs = path.join(root, 'bin/vramlab.js');
const GONE_PID = 2 ** 22 + 12345; // above Linux's pid_max: no such process

/** A store holding one finished run and one whose process died mid-run (status still "running"). */
async function orphanedStore(home: string): Promise<{ done: string; orphan: string }> {
  const store = await RunStore.open(home);
  const spec = parseSpec({ batch: 4 });
  const a = await store.create(spec, { name: 'finished' });
  await a.finish('done', null);
  const b = await store.create(spec, { name: 'orphan' });
  b.append([{ t: 1, allocated: 1, reserved: 2, active: 1, requested: 1, by: [1, 0, 0, 0, 0, 0, 0, 0] }], []);
  await b.flush();
  const metaFile = path.join(store.dir, b.id, 'meta.json');
  writeFileSync(metaFile, JSON.stringify({ ...JSON.parse(readFileSync(metaFile, 'utf8')), pid: GONE_PID }));
  return { done: a.id, orphan: b.id };
}

/** The real CLI, in its own process; `prefix` is a shell prelude (a ulimit) when given. */
function cli(home: string, args: string[], prefix = '') {
  const argv = [cliJs, ...args].map((a) => `'${a}'`).join(' ');
  const r = prefix
    ? spawnSync('sh', ['-c', `${prefix}; exec '${process.execPath}' ${argv}`], {
        env: { ...process.env, VRAMLAB_HOME: home },
        encoding: 'utf8',
      })
    : spawnSync(process.execPath, [cliJs, ...args], { env: { ...process.env, VRAMLAB_HOME: home }, encoding: 'utf8' });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

function expectListAndDeleteWork(home: string, ids: { done: string; orphan: string }, prefix: string, failure: RegExp) {
  const list = cli(home, ['runs', 'list', '--json'], prefix);
  expect(list.err).toMatch(failure); // the recovery failure is reported, not fatal
  expect(list.code).toBe(0);
  const runs = JSON.parse(list.out) as { id: string; status: string }[];
  expect(new Map(runs.map((r) => [r.id, r.status]))).toEqual(
    new Map([
      [ids.done, 'done'],
      [ids.orphan, 'interrupted'], // its process is gone, whether or not the rewrite landed
    ]),
  );
  const del = cli(home, ['runs', 'delete', ids.orphan], prefix);
  expect(del.err).toBe('');
  expect(del.code).toBe(0);
  const after = cli(home, ['runs', 'list', '--json'], prefix);
  expect(after.code).toBe(0);
  expect((JSON.parse(after.out) as { id: string }[]).map((r) => r.id)).toEqual([ids.done]);
}

describe('run store on a full disk', () => {
  let mnt = '';
  let mounted = false;
  let whyNot = '';
  beforeAll(() => {
    mnt = mkdtempSync(path.join(os.tmpdir(), 'vramlab-fulldisk-'));
    if (process.platform !== 'linux') whyNot = 'tmpfs is Linux only';
    else {
      const r = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', mnt], { encoding: 'utf8' });
      mounted = r.status === 0;
      if (!mounted) whyNot = `cannot mount a tmpfs here (${(r.stderr || r.error?.message || 'not root').trim()})`;
    }
  });
  afterAll(() => {
    if (mounted) spawnSync('umount', [mnt]);
    rmSync(mnt, { recursive: true, force: true });
  });

  it('lists and deletes runs on a full tmpfs, where recovery cannot rewrite a meta.json', async (ctx) => {
    if (!mounted) return ctx.skip(whyNot);
    const ids = await orphanedStore(mnt);
    // Fill the file system to the last byte.
    const fd = openSync(path.join(mnt, 'filler'), 'w');
    const block = Buffer.alloc(4096, 1);
    try {
      for (;;) writeSync(fd, block);
    } catch (err) {
      expect((err as NodeJS.ErrnoException).code).toBe('ENOSPC');
    } finally {
      closeSync(fd);
    }
    expectListAndDeleteWork(mnt, ids, '', /ENOSPC/);
    // The failed rewrite left no temp file behind in the orphan's folder (it is gone now) or elsewhere.
    for (const name of readdirSync(path.join(mnt, 'runs'))) expect(name.startsWith('.tmp-')).toBe(false);
  });

  it('lists and deletes runs when every write fails (file-size limit 0)', async (ctx) => {
    if (process.platform === 'win32') return ctx.skip('needs a POSIX shell and ulimit');
    const home = mkdtempSync(path.join(os.tmpdir(), 'vramlab-nowrite-'));
    try {
      const ids = await orphanedStore(home);
      // SIGXFSZ ignored (inherited through exec), so a write past the limit fails with EFBIG instead of killing.
      expectListAndDeleteWork(home, ids, "trap '' XFSZ; ulimit -f 0", /EFBIG/);
      // Without the limit the next open finishes the job: the orphan is gone, the other run intact.
      const store = await RunStore.open(home);
      expect(store.recoveryProblems).toEqual([]);
      expect((await store.list()).map((m) => [m.id, m.status])).toEqual([[ids.done, 'done']]);
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });
});

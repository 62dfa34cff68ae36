// A run store stays whole when two live processes share it, and one damaged meta.json
// spoils only its own run. Start-up recovery used to delete every `.tmp-` entry, including the temp file
// another live process (the app, while the CLI opens the store) was about to rename.
// And one meta.json holding `null` made list() throw for the whole store.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, readdirSync, rmSync, writeFileSync, existsSync, utimesSync } from 'node:fs';
import { spawn, spawnSync } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { buildSync } from 'esbuild';
import { RunStore } from '../../main/store/store';
import { parseSpec } from '../../main/contract/spec';
import { main } from '../../main/cli/main';
import { captureIO } from '../helpers/io';

let dir = '';
let childJs = '';
beforeAll(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'vramlab-shared-'));
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
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const home = (n: string) => path.join(dir, n);

describe('run store shared by two processes', () => {
  it("a second process opening the store never deletes the first one's temp files", async () => {
    const h = home('live');
    await RunStore.open(h);
    const child = spawn(process.execPath, [childJs, h], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    // Open the store again and again (each open runs recovery) while the child writes.
    const t0 = Date.now();
    let opens = 0;
    while (Date.now() - t0 < 4000 && child.exitCode === null) {
      await RunStore.open(h);
      opens++;
    }
    const alive = child.exitCode === null;
    if (child.exitCode === null) {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGKILL');
      await exited;
    }
    expect(err).toBe(''); // before the fix: ENOENT on rename of a temp file recovery had removed
    expect(alive).toBe(true);
    expect(opens).toBeGreaterThan(20);
    expect(out.match(/^done /gm)?.length ?? 0).toBeGreaterThan(1);
  });

  it("removes a dead process's temp files only after the grace period", async () => {
    const h = home('dead');
    const store = await RunStore.open(h);
    const w = await store.create(parseSpec({}));
    await w.finish('done', null);
    // A real second process that has exited: its pid is provably free of owners.
    const dead = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))']).stdout.toString();
    const tmp = path.join(store.dir, w.id, 'chunks', `.tmp-000001.json-${dead}-0badc0de`);
    const staging = path.join(store.dir, `.tmp-20260101-000000-abcdef-${dead}-0badc0de`);
    writeFileSync(tmp, '{');
    writeFileSync(staging, '');
    await RunStore.open(h); // default grace: too young to be sure
    expect(existsSync(tmp) && existsSync(staging)).toBe(true);
    await RunStore.open(h, { tempGraceMs: 0 });
    expect(existsSync(tmp) || existsSync(staging)).toBe(false);
    // Ownerless names (older versions) wait for the stale age.
    const old = path.join(store.dir, w.id, '.tmp-meta.json');
    writeFileSync(old, '{');
    await RunStore.open(h, { tempGraceMs: 0 });
    expect(existsSync(old)).toBe(true);
    utimesSync(old, new Date(0), new Date(0));
    await RunStore.open(h, { tempGraceMs: 0 });
    expect(existsSync(old)).toBe(false);
  });
});

describe('damaged meta.json', () => {
  it('skips and reports each damaged run; the rest of the store lists', async () => {
    const h = home('damaged');
    const store = await RunStore.open(h);
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const w = await store.create(parseSpec({}), { name: `run ${i}` });
      await w.finish('done', null);
      ids.push(w.id);
    }
    const meta = (id: string) => path.join(store.dir, id, 'meta.json');
    writeFileSync(meta(ids[0]), 'null');
    writeFileSync(meta(ids[1]), '{}');
    writeFileSync(meta(ids[2]), '{"id": "x", "name": ');
    writeFileSync(meta(ids[3]), JSON.stringify({ id: ids[3], name: 7, status: 'running' }));
    const reopened = await RunStore.open(h); // recovery must not trip over them either
    const { runs, damaged } = await reopened.scan();
    expect(runs.map((r) => r.id)).toEqual([ids[4]]);
    expect(damaged.map((d) => d.id).sort()).toEqual(ids.slice(0, 4).sort());
    expect(damaged.find((d) => d.id === ids[2])!.problem).toMatch(/not valid JSON/);
    await expect(reopened.meta(ids[0])).rejects.toThrow(/damaged/);

    process.env.VRAMLAB_HOME = h;
    try {
      const io = captureIO();
      expect(await main(['runs', 'list'], io)).toBe(0);
      expect(io.stdout()).toContain(ids[4]);
      expect(io.stderr().match(/skipped run/g)).toHaveLength(4);
    } finally {
      delete process.env.VRAMLAB_HOME;
    }
    expect(readdirSync(store.dir).filter((n) => n.startsWith('.tmp-'))).toEqual([]);
  });
});

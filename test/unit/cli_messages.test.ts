// The CLI's refusals, through the real CLI in its own process (dist/cli.cjs: `npm run build:main`
// first): bad --top / --device values are refused by name, a snapshot whose segments name
// device -1 says so, a grid cell whose cap is below the trace's starting state says "does not
// fit" while the other cells run, oversized spec files and huge echoes stay short, and the
// runs help says where exports go.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { writePickle } from '../../main/snapshot/pickle/writer';
import type { PickleValue } from '../../main/snapshot/pickle/values';

const root = path.resolve(__dirname, '../..');
const torch = (name: string) => path.join(root, 'test/fixtures/torch', `${name}.pickle`);
let dir = '';
beforeAll(() => void (dir = mkdtempSync(path.join(os.tmpdir(), 'vramlab-climsg-'))));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function cli(args: string[]): Promise<{ code: number | null; out: string; err: string }> {
  const child = spawn(process.execPath, [path.join(root, 'bin/vramlab.js'), ...args], {
    env: { ...process.env, VRAMLAB_HOME: path.join(dir, 'home') },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (err += d));
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, out, err })));
}

function file(name: string, content: string | Buffer): string {
  const f = path.join(dir, name);
  writeFileSync(f, content);
  return f;
}

describe('snapshot and replay arguments', () => {
  it('--top and --device must be numbers in range', async () => {
    const [top, top0, dev, devEmpty, devMissing, replayDev] = await Promise.all([
      cli(['snapshot', 'info', torch('mlp_adam'), '--top', 'abc']),
      cli(['snapshot', 'info', torch('mlp_adam'), '--top', '0']),
      cli(['snapshot', 'info', torch('mlp_adam'), '--device', '99999999999']),
      cli(['snapshot', 'info', torch('mlp_adam'), '--device=']),
      cli(['snapshot', 'info', torch('mlp_adam'), '--device', '7']),
      cli(['replay', torch('mlp_adam'), '--device', '1e0']),
    ]);
    expect(top).toMatchObject({ code: 2, out: '' });
    expect(top.err).toBe('vramlab snapshot: --top must be a whole number from 1 to 1000 (got "abc")\n');
    expect(top0.code).toBe(2);
    expect(dev.code).toBe(2);
    expect(dev.err).toBe('vramlab snapshot: --device must be a device index from 0 to 1023 (got "99999999999")\n');
    expect(devEmpty.code).toBe(2);
    expect(devEmpty.err).toMatch(/--device must be a device index .*\(got ""\)/);
    expect(devMissing.code).toBe(2);
    expect(devMissing.err).toBe('vramlab snapshot: the snapshot has nothing for device 7 (it holds device 0)\n');
    expect(replayDev.code).toBe(2);
    expect(replayDev.err).toMatch(/--device must be a device index .*\(got "1e0"\)/);
  });

  it('--top N lists N allocations', async () => {
    const r = await cli(['snapshot', 'info', torch('mlp_adam'), '--top', '3']);
    expect(r.code).toBe(0);
    const largest = r.out.split('largest allocations:\n')[1].split('\n\n')[0].trim().split('\n');
    expect(largest).toHaveLength(3);
  });

  it('a snapshot whose segments name device -1 says so, not bad --device "undefined"', async () => {
    const seg = new Map<string, PickleValue>([
      ['device', -1],
      ['address', 2 ** 20],
      ['total_size', 2 ** 21],
      ['stream', 0],
      ['segment_type', 'large'],
      [
        'blocks',
        [
          new Map<string, PickleValue>([
            ['size', 2 ** 21],
            ['state', 'inactive'],
          ]),
        ],
      ],
    ]);
    const f = file(
      'device_minus_one.pickle',
      writePickle(
        new Map<string, PickleValue>([
          ['segments', [seg]],
          ['device_traces', []],
        ]),
        { protocol: 4 },
      ),
    );
    const r = await cli(['snapshot', 'info', f]);
    expect(r.code).not.toBe(0);
    expect(r.err).not.toMatch(/undefined/);
    expect(r.err).toMatch(/device -1\b/);
  });

  it('replay --grid: a cap below the state the trace starts from is "does not fit" for that cell only', async () => {
    const [text, json] = await Promise.all([
      cli([
        'replay',
        torch('gpt_late_start'),
        '--grid',
        '--capacity',
        '1MiB',
        '--capacity',
        '80GiB',
        '--alloc-conf',
        'expandable_segments:False',
      ]),
      cli(['replay', torch('gpt_late_start'), '--grid', '--capacity', '1MiB', '--capacity', '80GiB', '--json']),
    ]);
    expect(text.err).toBe('');
    expect(text.code).toBe(0);
    // The grid's rows (the smallest capacity per setting follows in a table of its own).
    const rows = text.out.split('\n\nsmallest capacity')[0].trim().split('\n').slice(2);
    expect(rows).toHaveLength(2);
    expect(rows[0]).toMatch(/1\.00 MiB .*does not fit: 740\.00 MiB reserved before the trace's first event/);
    expect(rows[1]).toMatch(/80\.00 GiB .* fits/);
    expect(json.code).toBe(0);
    const cells = JSON.parse(json.out) as { capacity: number; fits?: boolean; peak_reserved?: number }[];
    expect(cells.length).toBe(10); // the snapshot's settings and four others, two caps each
    for (const c of cells) {
      if (c.capacity === 2 ** 20) expect(c.fits).toBe(false);
      else expect(c.peak_reserved).toBeGreaterThan(740 * 2 ** 20);
    }
    const single = await cli(['replay', torch('gpt_late_start'), '--capacity', '1MiB']);
    expect(single.code).toBe(1);
    expect(single.err).toMatch(/does not fit: 740\.00 MiB reserved before the trace's first event/);
  });

  it('an --alloc-conf longer than a spec allows is refused before the file is read', async () => {
    const r = await cli(['replay', path.join(dir, 'no_such.pickle'), '--alloc-conf', 'x'.repeat(100_000)]);
    expect(r.code).toBe(2);
    expect(r.err).toBe('vramlab replay: --alloc-conf must be at most 1024 characters (got 100000)\n');
  });
});

describe('spec files and messages', () => {
  it('a spec file over 8 MiB is refused by its size, unread; a histogram of 10^6 lengths by the 4096 limit', async () => {
    const big = file('big.json', JSON.stringify({ alloc_conf: 'x'.repeat(9 * 2 ** 20) }));
    const histogram = Array.from({ length: 1e6 }, (_, i) => [1 + (i % 64), 1]);
    const hist = file('hist.json', JSON.stringify({ model: { kind: 'gpt' }, shapes: { seq: { histogram } } }));
    const [r, h] = await Promise.all([cli(['run', big]), cli(['run', hist])]);
    expect(r.code).toBe(2);
    expect(r.err).toBe(`vramlab run: ${big} is 9.00 MiB: a spec file is at most 8.00 MiB\n`);
    expect(h.code).toBe(2);
    expect(h.err).toBe(
      'vramlab run: invalid spec:\n  shapes.seq.histogram: lists 1000000 items; no list in a spec may hold more than 4096\n',
    );
  });

  it('echoes in spec errors are clipped: long values, many keys, one issue per rule', async () => {
    const keys: Record<string, number> = {};
    for (let i = 0; i < 5000; i++) keys[`k${i}`] = i;
    const [conf, many, seed] = await Promise.all([
      cli(['run', file('conf.json', JSON.stringify({ alloc_conf: 'x'.repeat(2 ** 20) }))]),
      cli(['run', file('keys.json', JSON.stringify(keys))]),
      cli(['run', file('seed.json', JSON.stringify({ model: { kind: 'gpt' }, shapes: { seq: { min: 1, max: 8 }, seed: 1e300 } }))]),
    ]);
    expect(conf.code).toBe(2);
    expect(conf.err.length).toBeLessThan(400);
    expect(conf.err).toContain('(1048576 characters)');
    expect(many.code).toBe(2);
    expect(many.err).toBe(
      'vramlab run: invalid spec:\n  spec: has 5000 keys, more than the 256 any spec object may have: "k0", "k1", "k2", "k3", "k4", "k5", "k6", "k7" and 4992 more\n',
    );
    expect(seed.code).toBe(2);
    expect(seed.err).toBe('vramlab run: invalid spec:\n  shapes.seed: must be an integer from 0 to 4294967295 (got 1e+300)\n');
  });

  it('an unknown command or subcommand is quoted short', async () => {
    const [cmd, sub] = await Promise.all([cli(['q'.repeat(50_000)]), cli(['runs', 'w'.repeat(50_000)])]);
    expect(cmd.code).toBe(2);
    expect(cmd.err.split('\n')[0]).toBe(`vramlab: unknown command "${'q'.repeat(40)}"... (50000 characters)`);
    expect(sub.code).toBe(2);
    expect(sub.err.split('\n')[0]).toBe(`vramlab runs: unknown subcommand "${'w'.repeat(40)}"... (50000 characters)`);
  });
});

describe('runs help', () => {
  it('says the exports need a FILE and that - is stdout, as they behave', async () => {
    const [help, none, dash] = await Promise.all([
      cli(['runs', '--help']),
      cli(['runs', 'export-summary']),
      cli(['runs', 'export-summary', '--json', '-']),
    ]);
    expect(help.code).toBe(0);
    expect(help.out).not.toMatch(/Without a FILE/);
    expect(help.out).toMatch(/need --csv FILE or\s+--json FILE .*a FILE of - writes to stdout/s);
    expect(none.code).toBe(2);
    expect(none.err).toMatch(/give --csv FILE or --json FILE/);
    expect(dash.code).toBe(0);
    expect(JSON.parse(dash.out)).toMatchObject({ runs: [] });
  });
});

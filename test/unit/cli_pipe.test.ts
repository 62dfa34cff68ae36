// The CLI's whole output reaches a slow reader through a pipe. `vramlab ... --json | slow-reader` used to stop at 65536 bytes, because
// bin/vramlab.js called process.exit() while the pipe still held unsent output. A real
// process, a real pipe and a reader that waits before reading.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const root = path.resolve(__dirname, '../..');
let dir = '';
beforeAll(() => void (dir = mkdtempSync(path.join(os.tmpdir(), 'vramlab-pipe-'))));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function runCli(args: string[], readAfterMs: number): Promise<{ code: number | null; out: Buffer; err: string }> {
  const child = spawn(process.execPath, [path.join(root, 'bin/vramlab.js'), ...args], {
    env: { ...process.env, VRAMLAB_HOME: path.join(dir, 'home') },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const parts: Buffer[] = [];
  let err = '';
  child.stderr.on('data', (d) => (err += d));
  // Nobody reads stdout at first: the child fills the 64 KiB pipe and must wait for us.
  child.stdout.pause();
  setTimeout(() => child.stdout.on('data', (d: Buffer) => parts.push(d)).resume(), readAfterMs);
  const ended = new Promise((r) => child.stdout.once('end', r));
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  return Promise.all([ended, exited]).then(([, code]) => ({ code, out: Buffer.concat(parts), err }));
}

describe('CLI output through a pipe', () => {
  it('a slow reader gets every byte of a large export', async () => {
    const spec = path.join(dir, 'spec.json');
    writeFileSync(spec, JSON.stringify({ iterations: 400, model: { kind: 'mlp', in: 64, hidden: 64, depth: 2, out: 8 }, batch: 8 }));
    const made = await runCli(['run', spec, '--json'], 0);
    expect(made.code).toBe(0);
    const { id } = JSON.parse(made.out.toString());
    const { code, out, err } = await runCli(['runs', 'export', id, '--csv', '-'], 400);
    expect(err).toBe('');
    expect(code).toBe(0);
    // Before the fix: cut where the pipe was full (65536 bytes, or wherever the reader had got to).
    expect(out.length).toBeGreaterThan(65536);
    const text = out.toString();
    expect(text.endsWith('\r\n')).toBe(true);
    const rows = text.trimEnd().split('\r\n');
    const cols = rows[0].split(',').length;
    expect(rows.length).toBeGreaterThan(1000);
    expect(rows.every((r) => r.split(',').length === cols)).toBe(true); // no half row at the end
  });
});

#!/usr/bin/env node
// The CLI is bundled into dist/cli.cjs by `npm run build:main`.
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const bundle = path.join(here, '..', 'dist', 'cli.cjs');
if (!existsSync(bundle)) {
  process.stderr.write('vramlab is not built yet: run `npm run build` first.\n');
  process.exit(1);
}
// A reader that went away (`vramlab ... | head`) is not an error worth a stack trace.
for (const s of [process.stdout, process.stderr]) s.on('error', (err) => err.code === 'EPIPE' && process.exit(process.exitCode ?? 0));
const code = await createRequire(import.meta.url)(bundle).run(process.argv.slice(2));
process.exitCode = code;
// process.exit() drops what a pipe has not taken yet (output cut at 64 KiB), so wait until
// everything written so far is flushed; then exit, since a command may leave handles open.
await Promise.all([process.stdout, process.stderr].map((s) => new Promise((done) => s.write('', done))));
process.exit(code);

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
const code = await createRequire(import.meta.url)(bundle).run(process.argv.slice(2));
process.exit(code);

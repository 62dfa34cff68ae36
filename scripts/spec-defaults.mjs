// Writes test/fixtures/spec_defaults.json from the catalogue (main/contract/catalogue/fixture.ts):
// the defaults the native tests complete their partial specs with. Run by `npm run build:main`.
import { build } from 'esbuild';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const root = path.resolve(import.meta.dirname, '..');
const dir = mkdtempSync(path.join(tmpdir(), 'vramlab-spec-defaults-'));
try {
  const out = path.join(dir, 'fixture.mjs');
  await build({
    entryPoints: [path.join(root, 'main/contract/catalogue/fixture.ts')],
    bundle: true,
    platform: 'node',
    format: 'esm',
    outfile: out,
    logLevel: 'warning',
  });
  const { specDefaultsJson } = await import(pathToFileURL(out).href);
  const target = path.join(root, 'test/fixtures/spec_defaults.json');
  writeFileSync(target, specDefaultsJson());
  console.log(`wrote ${path.relative(root, target)}`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}

// Writes a spec's variants under the usual fixes for varying lengths (main/runner/fixes.ts)
// as the engine reads them (explicit per-iteration shapes), one JSON list, for measuring
// the same runs under PyTorch with the reference protocol on the GPU machine:
//   node scripts/length-fix-specs.mjs SPEC.json > variants.json
//   python3 bench/torch/protocol_fixes.py PROTOCOL_DIR variants.json out.json   (on the GPU machine)
// (protocol_fixes.py adds the empty_cache() cadence the reference protocol lacks).
import { build } from 'esbuild';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const root = path.resolve(import.meta.dirname, '..');
const file = process.argv[2];
if (!file) {
  console.error('usage: node scripts/length-fix-specs.mjs SPEC.json > variants.json');
  process.exit(2);
}
const dir = mkdtempSync(path.join(tmpdir(), 'vramlab-fix-specs-'));
try {
  const out = path.join(dir, 'fixes.mjs');
  await build({
    entryPoints: [path.join(root, 'main/runner/fixes.ts')],
    bundle: true,
    platform: 'node',
    format: 'esm',
    outfile: out,
    logLevel: 'warning',
  });
  const { lengthFixSpecs } = await import(pathToFileURL(out).href);
  const variants = lengthFixSpecs(JSON.parse(readFileSync(file, 'utf8'))).map(({ fix, spec, steps }) => ({
    ...spec,
    shapes: steps,
    fix: fix.id,
  }));
  process.stdout.write(JSON.stringify(variants) + '\n');
} finally {
  rmSync(dir, { recursive: true, force: true });
}

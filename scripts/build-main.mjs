// Bundles the Node side: the CLI (also serve mode) and Electron's main + preload scripts,
// and writes the spec defaults fixture the native tests read (scripts/spec-defaults.mjs).
import { build } from 'esbuild';

const common = {
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'cjs',
  sourcemap: true,
  external: ['electron', '*.node'],
  logLevel: 'warning',
  // paths.ts reads __dirname in the bundle; import.meta is only for unbundled (test) runs.
  logOverride: { 'empty-import-meta': 'silent' },
};

await Promise.all([
  build({ ...common, entryPoints: ['main/cli/entry.ts'], outfile: 'dist/cli.cjs' }),
  build({ ...common, entryPoints: ['main/electron/main.ts'], outfile: 'dist/electron/main.cjs' }),
  build({ ...common, entryPoints: ['main/electron/preload.ts'], outfile: 'dist/electron/preload.cjs' }),
]);
console.log('built dist/cli.cjs, dist/electron/main.cjs, dist/electron/preload.cjs');
await import('./spec-defaults.mjs');

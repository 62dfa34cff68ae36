// The layering of docs/architecture.md, checked: each folder of main/ may import only the
// layers listed for it, the renderer only main/contract, and nothing but the CLI itself
// imports main/cli. Run by `npm run typecheck`; exits 1 naming every import that breaks a rule.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** Which layers each layer may import (its own is always allowed). */
export const ALLOWED = {
  contract: [],
  paths: [],
  addon: ['contract', 'paths'],
  export: ['contract'],
  store: ['contract', 'export', 'paths'],
  snapshot: ['contract', 'addon', 'paths'],
  playground: ['contract', 'addon'],
  'host-core': ['contract', 'addon'],
  runner: ['contract', 'addon', 'paths', 'store', 'export', 'host-core'],
  host: ['contract', 'addon', 'paths', 'store', 'export', 'snapshot', 'playground', 'runner', 'host-core'],
  server: ['contract', 'paths', 'host', 'host-core'],
  ipc: ['contract', 'host', 'host-core'],
  electron: ['contract', 'addon', 'paths', 'host', 'host-core', 'ipc', 'server'],
  cli: ['contract', 'addon', 'paths', 'store', 'export', 'snapshot', 'playground', 'runner', 'host', 'host-core', 'server'],
  renderer: ['contract'],
};

/** The layer a repository path belongs to, or null when it is outside the checked tree. */
export function layerOf(file) {
  const p = file
    .split(path.sep)
    .join('/')
    .replace(/\.(ts|svelte|js|mjs)$/, '');
  if (p.startsWith('renderer/src/')) return 'renderer';
  if (!p.startsWith('main/')) return null;
  if (p === 'main/paths') return 'paths';
  if (p === 'main/host/host' || p === 'main/host/errors' || p === 'main/host/client') return 'host-core';
  return p.split('/')[1];
}

const SPECIFIER =
  /(?:^|[\s;>])(?:import|export)\s[^'"]*?from\s*['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)|^\s*import\s+['"]([^'"]+)['"]/gm;

/** Every rule broken by the given sources ({path, text}, paths relative to the repository). */
export function check(sources) {
  const problems = [];
  for (const { path: file, text } of sources) {
    const from = layerOf(file);
    if (!from) continue;
    for (const m of text.matchAll(SPECIFIER)) {
      const spec = m[1] ?? m[2] ?? m[3];
      let target;
      if (spec.startsWith('$contract')) target = 'main/contract/x.ts';
      else if (spec.startsWith('.'))
        target = path.posix.normalize(path.posix.join(path.posix.dirname(file.split(path.sep).join('/')), spec));
      else continue; // a package
      const to = layerOf(target);
      if (to === null) {
        if (from === 'renderer' && !target.startsWith('renderer/'))
          problems.push(`${file}: imports "${spec}", outside the renderer and main/contract`);
        continue;
      }
      if (to === from) continue;
      if (!ALLOWED[from].includes(to))
        problems.push(
          `${file}: ${from} must not import ${to} ("${spec}"); ${from} may import ${ALLOWED[from].join(', ') || 'nothing else of main'}`,
        );
    }
  }
  return problems;
}

function walk(dir, out = []) {
  for (const name of readdirSync(dir)) {
    const p = path.join(dir, name);
    if (statSync(p).isDirectory()) walk(p, out);
    else if (/\.(ts|svelte)$/.test(name)) out.push(p);
  }
  return out;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
  const files = [...walk(path.join(root, 'main')), ...walk(path.join(root, 'renderer/src'))];
  const problems = check(files.map((f) => ({ path: path.relative(root, f), text: readFileSync(f, 'utf8') })));
  if (problems.length) {
    console.error(`import boundaries (docs/architecture.md): ${problems.length} upward import(s)\n  ${problems.join('\n  ')}`);
    process.exit(1);
  }
  console.log(`import boundaries: ${files.length} files, every import allowed`);
}

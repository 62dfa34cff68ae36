// The layering of docs/architecture.md, checked: each folder of main/ may import only the
// layers listed for it, the renderer only main/contract, nothing but the CLI itself imports
// main/cli, no module reaches itself through its imports (type-only ones included), and each
// room of native/ includes only the rooms below it. Run by `npm run typecheck`; exits 1
// naming every import that breaks a rule.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

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

/** Which rooms of native/ each room may include (its own is always allowed): device at the
 *  bottom, then the allocator, the engine, the runner, and the addon over them all. */
export const NATIVE_ALLOWED = {
  device: [],
  allocator: ['device'],
  engine: ['allocator', 'device'],
  runner: ['engine', 'allocator', 'device'],
  addon: ['runner', 'engine', 'allocator', 'device'],
  tests: ['addon', 'runner', 'engine', 'allocator', 'device'],
};

const posix = (file) => file.split(path.sep).join('/');

/** The layer a repository path belongs to, or null when it is outside the checked tree. */
export function layerOf(file) {
  const p = posix(file).replace(/\.(ts|svelte|js|mjs)$/, '');
  if (p.startsWith('renderer/src/')) return 'renderer';
  if (!p.startsWith('main/')) return null;
  if (p === 'main/paths') return 'paths';
  if (p === 'main/host/host' || p === 'main/host/errors' || p === 'main/host/client') return 'host-core';
  return p.split('/')[1];
}

/** The script of a .svelte file (instance and module), or the whole text of any other. */
function scriptOf(file, text) {
  if (!file.endsWith('.svelte')) return text;
  return [...text.matchAll(/<script\b[^>]*>([\s\S]*?)<\/script>/g)].map((m) => m[1]).join('\n');
}

/** Every module a source names, by TypeScript's own scanner: static and side-effect imports,
 *  `export ... from`, type-only imports, dynamic `import()`, `require()` and `import x = require()`,
 *  and `import('...')` types; comments and strings are not mistaken for imports. */
export function importsOf(file, text) {
  return ts.preProcessFile(scriptOf(file, text), true, true).importedFiles.map((f) => f.fileName);
}

/** The repository path a specifier points at (without resolving an extension), or null for a package. */
function target(file, spec) {
  if (spec === '$contract') return 'main/contract/index';
  if (spec.startsWith('$contract/')) return `main/contract/${spec.slice('$contract/'.length)}`;
  if (!spec.startsWith('.')) return null;
  return path.posix.normalize(path.posix.join(path.posix.dirname(posix(file)), spec));
}

const unlisted = (layer) =>
  `main/${layer}/ is not a layer of docs/architecture.md: add it to ALLOWED in scripts/check-imports.mjs (and the table in the doc)`;

/** Every layer rule broken by the given sources ({path, text}, paths relative to the repository). */
export function checkLayers(sources) {
  const problems = [];
  const named = new Set();
  for (const { path: file, text } of sources) {
    const from = layerOf(file);
    if (!from) continue;
    if (!ALLOWED[from]) {
      if (!named.has(from)) problems.push(unlisted(from));
      named.add(from);
      continue;
    }
    for (const spec of importsOf(file, text)) {
      const t = target(file, spec);
      if (t === null) continue; // a package
      const to = layerOf(t);
      if (to === null) {
        if (from === 'renderer' && !t.startsWith('renderer/'))
          problems.push(`${file}: imports "${spec}", outside the renderer and main/contract`);
        continue;
      }
      if (to === from) continue;
      if (!ALLOWED[to]) {
        problems.push(`${file}: imports "${spec}" from ${unlisted(to)}`);
        continue;
      }
      if (!ALLOWED[from].includes(to))
        problems.push(
          `${file}: ${from} must not import ${to} ("${spec}"); ${from} may import ${ALLOWED[from].join(', ') || 'nothing else of main'}`,
        );
    }
  }
  return problems;
}

/** The source a specifier resolves to among the given paths, as the bundlers would find it. */
function resolve(known, file, spec) {
  const t = target(file, spec);
  if (t === null) return null;
  const base = t.replace(/\.(js|mjs)$/, '');
  for (const c of [t, `${base}.ts`, `${base}.svelte`, `${base}.mjs`, `${t}/index.ts`]) if (known.has(c)) return c;
  return null;
}

/** Every import circle among the sources, each named once as `a -> b -> a` (Tarjan's strongly
 *  connected components; a component of more than one module, or a module importing itself). */
export function findCycles(sources) {
  const known = new Map(sources.map((s) => [posix(s.path), s.text]));
  const edges = new Map();
  for (const [file, text] of known)
    edges.set(
      file,
      [...new Set(importsOf(file, text).map((s) => resolve(known, file, s)))].filter((t) => t !== null),
    );
  let next = 0;
  const index = new Map();
  const low = new Map();
  const stack = [];
  const on = new Set();
  const cycles = [];
  const visit = (v) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    on.add(v);
    for (const w of edges.get(v)) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v), low.get(w)));
      } else if (on.has(w)) low.set(v, Math.min(low.get(v), index.get(w)));
    }
    if (low.get(v) !== index.get(v)) return;
    const comp = [];
    let w;
    do {
      w = stack.pop();
      on.delete(w);
      comp.push(w);
    } while (w !== v);
    if (comp.length > 1 || edges.get(v).includes(v)) cycles.push(pathThrough(new Set(comp), edges, comp.sort()[0]));
  };
  for (const v of [...known.keys()].sort()) if (!index.has(v)) visit(v);
  return cycles.map((c) => `import circle: ${c.join(' -> ')} (move what both need into the lower module)`);
}

/** One shortest circle from `start` back to itself inside a strongly connected component. */
function pathThrough(comp, edges, start) {
  const prev = new Map();
  const queue = [start];
  while (queue.length) {
    const v = queue.shift();
    for (const w of edges.get(v)) {
      if (!comp.has(w)) continue;
      if (w === start) {
        const out = [start];
        for (let u = v; u !== start; u = prev.get(u)) out.splice(1, 0, u);
        return [...out, start];
      }
      if (!prev.has(w)) {
        prev.set(w, v);
        queue.push(w);
      }
    }
  }
  return [start, start];
}

/** Every rule of main/ and the renderer: layers and circles. */
export function check(sources) {
  return [...checkLayers(sources), ...findCycles(sources)];
}

/** Every `#include "room/..."` in native/ that reaches a room above its own. */
export function checkNative(sources) {
  const problems = [];
  for (const { path: file, text } of sources) {
    const p = posix(file);
    if (!p.startsWith('native/')) continue;
    const from = p.split('/')[1];
    if (!NATIVE_ALLOWED[from]) {
      problems.push(
        `${file}: native/${from}/ is not a room of docs/architecture.md: add it to NATIVE_ALLOWED in scripts/check-imports.mjs`,
      );
      continue;
    }
    for (const m of text.matchAll(/^\s*#\s*include\s*"([^"]+)"/gm)) {
      const to = m[1].split('/')[0];
      if (!m[1].includes('/') || to === from || !(to in NATIVE_ALLOWED)) continue; // same folder, or not a room
      if (!NATIVE_ALLOWED[from].includes(to))
        problems.push(
          `${file}: native/${from} must not include ${to} ("${m[1]}"); ${from} may include ${NATIVE_ALLOWED[from].join(', ') || 'no other room'}`,
        );
    }
  }
  return problems;
}

function walk(dir, pattern, out = []) {
  if (!existsSync(dir)) return out;
  for (const name of readdirSync(dir)) {
    const p = path.join(dir, name);
    if (statSync(p).isDirectory()) walk(p, pattern, out);
    else if (pattern.test(name)) out.push(p);
  }
  return out;
}

/** The sources the check reads, paths relative to the repository root. */
export function treeSources(root) {
  const read = (files) => files.map((f) => ({ path: posix(path.relative(root, f)), text: readFileSync(f, 'utf8') }));
  const ts = /\.(ts|svelte|mjs)$/;
  return {
    main: read([...walk(path.join(root, 'main'), ts), ...walk(path.join(root, 'renderer/src'), ts)]),
    native: read(walk(path.join(root, 'native'), /\.(h|hpp|cpp|cc|cu|cuh)$/)),
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
  const { main, native } = treeSources(root);
  const problems = [...check(main), ...checkNative(native)];
  if (problems.length) {
    console.error(`import boundaries (docs/architecture.md): ${problems.length} problem(s)\n  ${problems.join('\n  ')}`);
    process.exit(1);
  }
  console.log(`import boundaries: ${main.length} TypeScript/Svelte and ${native.length} native files, every import allowed, no circles`);
}

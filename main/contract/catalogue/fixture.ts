// test/fixtures/spec_defaults.json, as the catalogue produces it: the full default spec,
// each family's spec defaults and default model, each optimizer's defaults and the mode
// defaults. The native tests complete partial specs with it (native/tests/spec_util.h);
// scripts/spec-defaults.mjs writes it and test/unit/spec_defaults.test.ts keeps it in step.
import { parseSpec } from '../spec';
import { MODE_DEFAULTS, MODEL_KINDS, OPTIMIZER_KINDS, PARALLEL_KINDS, completeParallel, familyOf } from './index';

export function specDefaults() {
  return {
    spec: parseSpec({}),
    models: Object.fromEntries(
      MODEL_KINDS.map((kind) => [kind, { spec: familyOf(kind)!.specDefaults, model: parseSpec({ model: { kind } }).model }]),
    ),
    optimizers: Object.fromEntries(OPTIMIZER_KINDS.map((kind) => [kind, parseSpec({ optimizer: kind }).optimizer])),
    modes: MODE_DEFAULTS,
    parallel: Object.fromEntries(PARALLEL_KINDS.map((kind) => [kind, completeParallel({ kind })])),
  };
}

/** The file's text: two levels expanded, everything deeper on one line. */
export function specDefaultsJson(): string {
  const inline = (v: unknown): string => {
    if (Array.isArray(v)) return `[${v.map(inline).join(', ')}]`;
    if (v && typeof v === 'object')
      return `{${Object.entries(v)
        .map(([k, x]) => `${JSON.stringify(k)}: ${inline(x)}`)
        .join(', ')}}`;
    return JSON.stringify(v);
  };
  const block = (o: Record<string, unknown>, indent: string, expand: (k: string) => boolean): string =>
    `{\n${Object.entries(o)
      .map(
        ([k, v]) =>
          `${indent}  ${JSON.stringify(k)}: ${expand(k) ? block(v as Record<string, unknown>, indent + '  ', () => false) : inline(v)}`,
      )
      .join(',\n')}\n${indent}}`;
  return block(specDefaults(), '', (k) => k !== 'modes' && k !== 'parallel') + '\n';
}

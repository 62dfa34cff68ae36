// Generic code (work limits, fit, sweeps, shape draws) reads a model's depth, sequence length
// and widths through its family's roles (catalogue), never by field name, so a family may name
// its fields as it likes (as transformers' attribute_map allows) and still be bounded.
import { describe, expect, it } from 'vitest';
import { defineFamily } from '../../main/contract/catalogue/family';
import { families, modelDims, seqField } from '../../main/contract/catalogue';
import { layerSteps, MAX_LAYER_STEPS } from '../../main/contract/limits';
import { checkSpec, parseSpec } from '../../main/contract/spec';
import { paramValue, withParam } from '../../main/contract/sweep_params';

const defaults = (fields: Record<string, { default: unknown }>) =>
  Object.fromEntries(Object.entries(fields).map(([k, f]) => [k, f.default]));

describe('family roles', () => {
  it.each(families().map((f) => [f.kind, f] as const))('%s names int fields of its own for depth, sequence and widths', (_k, f) => {
    // A family whose sizes live in a nested object (hf) computes its depth from it.
    const depthField = typeof f.roles.depth === 'string' ? [f.roles.depth] : [];
    const named = [...depthField, ...(f.roles.seq ? [f.roles.seq] : []), ...f.roles.widths];
    for (const name of named) expect(f.fields[name]?.type, `${f.kind}.${name}`).toBe('int');
    expect(f.roles.seq !== undefined).toBe(f.transformer);
  });

  it.each(families().map((f) => [f.kind, f] as const))('%s: the work limit follows its depth role', (kind, f) => {
    const model = parseSpec({ model: { kind } }).model as unknown as { kind: string } & Record<string, number>;
    const depth = modelDims(model).depth;
    const role = f.roles.depth;
    expect(depth).toBe(typeof role === 'function' ? role(model as never) : model[role]);
    // Enough iterations to pass the layer-pass bound by one block's worth.
    const iterations = Math.floor(MAX_LAYER_STEPS / depth) + 1;
    const r = checkSpec({ model, iterations: Math.min(iterations, 10_000) });
    if (iterations <= 10_000) {
      expect(r.ok).toBe(false);
      if (!r.ok) expect(r.issues.join('\n')).toMatch(/too much work/);
    }
    expect(layerSteps({ model, iterations: 3, accum: 2, batch: 1, device: 'sim:h100-80gb' })).toBe(6 * depth);
  });

  it.each(families().map((f) => [f.kind, f] as const))('%s: the tensor-size limit reads its width roles', (kind, f) => {
    for (const wide of f.roles.widths) {
      const model = { kind, ...defaults(f.fields), [wide]: 12345 };
      expect(modelDims(model).widths).toContain(12345);
    }
  });

  it('refuses a tensor over 1 PiB through the widths and the sequence', () => {
    // gpt's MLP row is 4 x dim wide (a derived width): 2^18 features x (2^17 + 1) x 2^12 rows x 8 B
    // is just over 2^50 B; with dim alone (2^16) it would be a quarter of that, and accepted.
    const model = { kind: 'gpt', dim: 2 ** 16, heads: 2 ** 10, seq: 2 ** 12, depth: 1 };
    expect(checkSpec({ model, batch: 2 ** 17 }).ok).toBe(true);
    const r = checkSpec({ model, batch: 2 ** 17 + 1 });
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.issues.join('\n')).toMatch(/more than the 1125899906842624-byte/);
  });

  it("maps fit's and sweeps' seq to the family's sequence role", () => {
    for (const f of families()) {
      const spec = { model: { kind: f.kind } };
      const set = withParam(spec as never, 'seq', 64);
      if (f.roles.seq) {
        expect(seqField(f.kind)).toBe(f.roles.seq);
        expect((set.model as Record<string, unknown>)[f.roles.seq]).toBe(64);
        expect(paramValue(set, 'seq')).toBe(64);
      } else expect(seqField(f.kind)).toBeUndefined();
    }
  });

  it('is required of every family description (a family without roles does not type-check)', () => {
    const fields = { n_layer: { type: 'int', min: 1, max: 8, default: 2, label: 'Layers', meaning: 'blocks' } } as const;
    const base = {
      kind: 'other',
      label: 'Other',
      summary: '',
      fields,
      specDefaults: {},
      losses: ['sum'],
      blocks: true,
      transformer: false,
      loraTargets: [],
      loraDefaultTargets: [],
      presets: [],
      check: () => [],
      name: () => 'other',
      parameters: () => 0,
    } as const;
    // @ts-expect-error roles is missing
    defineFamily(base);
    // @ts-expect-error a role must name one of the family's int fields
    defineFamily({ ...base, roles: { depth: 'depth', widths: [] } });
    const ok = defineFamily({ ...base, roles: { depth: 'n_layer', widths: [] } });
    expect(ok.roles.depth).toBe('n_layer');
  });
});

// test/fixtures/spec_defaults.json is what the catalogue produces: the native tests complete
// their partial specs with it, so it must never drift from the contract.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { specDefaults, specDefaultsJson } from '../../main/contract/catalogue/fixture';
import { parseSpec } from '../../main/contract/spec';

const file = path.resolve(import.meta.dirname, '../fixtures/spec_defaults.json');

describe('spec_defaults.json', () => {
  it('equals what the catalogue produces (run `node scripts/spec-defaults.mjs` after changing it)', () => {
    expect(readFileSync(file, 'utf8')).toBe(specDefaultsJson());
  });

  it('completes a partial spec the way the contract does', () => {
    // spec_util.h's rule: spec defaults, then the family's, then the mode's, then the given fields.
    const d = JSON.parse(readFileSync(file, 'utf8')) as ReturnType<typeof specDefaults>;
    const partial = { model: { kind: 'gpt', depth: 2 }, mode: 'loss_accumulation' } as const;
    const fam = d.models.gpt;
    const completed = { ...d.spec, ...fam.spec, ...d.modes.loss_accumulation, ...partial, model: { ...fam.model, ...partial.model } };
    expect(completed).toEqual(parseSpec(partial));
    expect(d.optimizers.adamw).toEqual(parseSpec({ optimizer: 'adamw' }).optimizer);
  });
});

// The engine and the catalogue name the same things: its model families and optimizers are
// the catalogue's (FAMILY_TABLE, OPTIMIZER_TABLE), its memory categories are CATEGORIES in the
// same order and spelling, its allocator size classes are ALLOCATOR_CONSTANTS; loading an
// addon that disagrees fails. And, as PyTorch's optim_db drives its optimizer tests, every
// optimizer of the catalogue runs on the real engine and keeps the state its description says.
import { describe, expect, it } from 'vitest';
import { checkAgreement, loadAddon } from '../../main/addon/load';
import { ALLOCATOR_CONSTANTS } from '../../main/contract/allocator';
import { MODEL_KINDS, OPTIMIZER_KINDS, optimizers } from '../../main/contract/catalogue';
import { CACHES, LOSSES, MODES, PRECISIONS, WEIGHTS } from '../../main/contract/catalogue/spec_fields';
import { CATEGORIES } from '../../main/contract/runs';
import { parseSpec } from '../../main/contract/spec';

const addon = loadAddon();

describe('engine registries against the catalogue', () => {
  it('has the catalogue’s families and optimizers, no more and no fewer', () => {
    expect([...addon.modelFamilies].sort()).toEqual([...MODEL_KINDS].sort());
    expect([...addon.optimizerKinds].sort()).toEqual([...OPTIMIZER_KINDS].sort());
  });

  it('parses the spec’s word-valued fields from the catalogue’s words, in its order', () => {
    expect(addon.specWords).toEqual({ precision: PRECISIONS, weights: WEIGHTS, mode: MODES, loss: LOSSES, cache: CACHES });
  });

  it('spells the memory categories as the contract does, in its order, and has its allocator constants', () => {
    expect(addon.memoryCategories).toEqual([...CATEGORIES]);
    expect(addon.allocatorConstants).toEqual({ ...ALLOCATOR_CONSTANTS });
  });

  it('refuses to load an addon whose categories or constants differ', () => {
    const good = { memoryCategories: [...CATEGORIES], allocatorConstants: { ...ALLOCATOR_CONSTANTS } };
    expect(() => checkAgreement(good)).not.toThrow();
    const singular = ['parameter', ...CATEGORIES.slice(1)];
    expect(() => checkAgreement({ ...good, memoryCategories: singular })).toThrow(/memory categories \[parameter,/);
    const swapped = [CATEGORIES[1], CATEGORIES[0], ...CATEGORIES.slice(2)];
    expect(() => checkAgreement({ ...good, memoryCategories: swapped })).toThrow(/memory categories/);
    expect(() => checkAgreement({ ...good, allocatorConstants: { ...good.allocatorConstants, smallBuffer: 4 << 20 } })).toThrow(
      /allocator constant smallBuffer = 4194304, main\/contract\/allocator.ts has 2097152/,
    );
    expect(() => checkAgreement({ memoryCategories: undefined as never, allocatorConstants: undefined as never })).toThrow(/rebuild/);
  });

  it.each(optimizers().map((o) => [o.kind, o] as const))('runs optimizer %s with the state its description says', (kind, o) => {
    const defaults = Object.fromEntries(Object.entries(o.fields).map(([k, f]) => [k, f.default]));
    const args = kind === 'sgd' ? { ...defaults, momentum: 0.9 } : defaults;
    const spec = parseSpec({
      model: { kind: 'mlp', in: 256, hidden: 512, depth: 2, out: 16 },
      batch: 8,
      iterations: 2,
      optimizer: { kind, ...args },
    });
    const r = addon.runExperiment(spec);
    // After zero_grad (set_to_none) what the step left beyond the parameters and the input
    // batch is the optimizer's state: one parameter-sized buffer per parameter per state buffer.
    const state = r.readings.it1_after_zero_grad - r.readings.input;
    expect(state).toBe(o.stateBuffers(args as never) * r.readings.params);
  });
});

// The experiment form's data-parallel settings: the kinds come from the catalogue (one not
// simulated yet is refused with the contract's reason under the kind), the form sends
// parallel only when training, fields' reasons land under their inputs, and a run's spec
// comes back into the form unchanged.
import { describe, expect, it } from 'vitest';
import { chooseFamily, chooseParallel, defaultForm, formToSpec, specToForm } from '../../renderer/src/lib/specForm';
import { parallelChoices } from '../../main/contract/catalogue/parallel_choices';
import { PARALLEL_KINDS, SIMULATED_PARALLEL_KINDS } from '../../main/contract/catalogue/parallel';
import { parseSpec } from '../../main/contract/spec';

function gptForm() {
  const f = defaultForm();
  chooseFamily(f, 'gpt');
  return f;
}

describe('experiment form: data parallel', () => {
  it('sends no parallel on one GPU, and FSDP2 with its policy when chosen (history off: single-GPU only)', () => {
    const f = gptForm();
    expect(formToSpec(f).spec!.parallel).toBeUndefined();
    chooseParallel(f, 'fsdp2');
    f.parallel_world = '4';
    f.parallel_param_dtype = 'bf16';
    const r = formToSpec(f);
    expect(r.errors).toEqual({});
    expect(r.spec!.parallel).toEqual({ kind: 'fsdp2', world: 4, reshard_after_forward: true, param_dtype: 'bf16', reduce_dtype: null });
    expect(r.spec!.history).toBe(false);
    expect(parseSpec(r.spec).parallel).toEqual(r.spec!.parallel);
    expect(formToSpec(specToForm(r.spec!)).spec).toEqual(r.spec);
  });

  it('sends parallel for training only', () => {
    const f = gptForm();
    chooseParallel(f, 'fsdp2');
    f.mode = 'inference';
    const r = formToSpec(f);
    expect(r.errors).toEqual({});
    expect(r.spec!.parallel).toBeUndefined();
  });

  it('offers every catalogue kind, the ones not simulated disabled and refused under the kind', () => {
    const choices = parallelChoices();
    expect(choices.map((c) => c.kind)).toEqual([...PARALLEL_KINDS]);
    for (const c of choices) {
      expect(c.simulated).toBe(SIMULATED_PARALLEL_KINDS.includes(c.kind));
      const f = gptForm();
      chooseParallel(f, c.kind);
      const r = formToSpec(f);
      if (c.simulated) expect(r.errors).toEqual({});
      else expect(r.errors.parallelKind).toMatch(/not simulated yet/);
    }
  });

  it("puts each reason under its input: the world's range, FSDP2 on a model without blocks", () => {
    const f = gptForm();
    chooseParallel(f, 'fsdp2');
    f.parallel_world = '0';
    expect(formToSpec(f).errors.parallel_world).toMatch(/integer from 1/);
    const mlp = defaultForm();
    chooseFamily(mlp, 'mlp');
    chooseParallel(mlp, 'fsdp2');
    expect(formToSpec(mlp).errors.parallelKind).toMatch(/fsdp2 shards a transformer/);
  });
});

// The spec's `parallel` key: validated once at the boundary, completed with PyTorch's
// defaults, refused where the simulation does not apply; `world` as a sweep/fit parameter.
import { describe, expect, it } from 'vitest';
import { checkSpec, parseSpec, type SpecInput } from '../../main/contract/spec';
import { withParam, paramValue } from '../../main/contract/sweep_params';

const gpt = { kind: 'gpt', vocab: 8192, seq: 256, dim: 512, depth: 6, heads: 8 } as const;

describe('spec.parallel', () => {
  it('is null on one GPU and completes fsdp2 with fully_shard and MixedPrecisionPolicy defaults', () => {
    expect(parseSpec({ model: gpt }).parallel).toBeNull();
    expect(parseSpec({ model: gpt, parallel: { kind: 'fsdp2' } }).parallel).toEqual({
      kind: 'fsdp2',
      world: 2,
      reshard_after_forward: true,
      param_dtype: null,
      reduce_dtype: null,
    });
    expect(
      parseSpec({ model: gpt, parallel: { kind: 'fsdp2', world: 8, param_dtype: 'bf16', reduce_dtype: 'fp32' } }).parallel,
    ).toMatchObject({
      world: 8,
      param_dtype: 'bf16',
      reduce_dtype: 'fp32',
    });
  });

  it('completes ddp with DistributedDataParallel defaults', () => {
    expect(parseSpec({ model: gpt, parallel: { kind: 'ddp' } }).parallel).toEqual({
      kind: 'ddp',
      world: 2,
      bucket_cap_mb: 25,
      gradient_as_bucket_view: false,
    });
    expect(checkSpec({ parallel: { kind: 'ddp', world: 4 } }).ok).toBe(true); // any model: DDP replicates it
  });

  it('refuses what it cannot simulate, naming the field', () => {
    const bad = (p: unknown, extra: Record<string, unknown> = {}) => {
      const r = checkSpec({ model: gpt, parallel: p, ...extra });
      expect(r.ok).toBe(false);
      return r.ok ? '' : r.issues.join('\n');
    };
    expect(bad({ kind: 'ddp', world: 2, bucket_cap_mb: 0 })).toMatch(/parallel\.bucket_cap_mb/);
    expect(bad({ kind: 'ddp', reshard_after_forward: true })).toMatch(/unknown key "reshard_after_forward"/);
    expect(bad({ kind: 'ddp' }, { weights: 'bf16' })).toMatch(/weights/);
    expect(bad({ kind: 'tp' })).toMatch(/parallel\.kind must be "ddp" or "fsdp2"/);
    expect(bad({ kind: 'fsdp2', world: 0 })).toMatch(/parallel\.world/);
    expect(bad({ kind: 'fsdp2', param_dtype: 'fp8' })).toMatch(/parallel\.param_dtype/);
    expect(bad({ kind: 'fsdp2', bucket_cap_mb: 25 })).toMatch(/unknown key "bucket_cap_mb"/);
    expect(checkSpec({ parallel: { kind: 'fsdp2' } }).ok).toBe(false); // mlp has no blocks to shard
    expect(bad({ kind: 'fsdp2' }, { weights: 'bf16' })).toMatch(/weights/);
    expect(bad({ kind: 'fsdp2' }, { mode: 'inference' })).toMatch(/mode/);
  });

  it('lets hf models, built as users build them, take bf16 weights and LoRA under FSDP2 and DDP', () => {
    const hf = { kind: 'hf', preset: 'qwen2.5-0.5b', seq: 256 } as const;
    for (const kind of ['fsdp2', 'ddp'] as const) {
      const r = checkSpec({ model: hf, weights: 'bf16', finetune: { method: 'lora' }, parallel: { kind } });
      expect(r.ok ? '' : r.issues.join('\n')).toBe('');
    }
    // the lab's own families are built on the meta device in fp32 and trained in full
    const lab = checkSpec({ model: gpt, finetune: { method: 'lora' }, parallel: { kind: 'fsdp2' } });
    expect(lab.ok ? '' : lab.issues.join('\n')).toMatch(/finetune\.method.*hf models take LoRA too/);
  });

  it('sweeps and fits world inside parallel (FSDP2 when the spec has none)', () => {
    const base: SpecInput = { model: gpt, parallel: { kind: 'fsdp2', reshard_after_forward: false } };
    const w8 = withParam(base, 'world', 8);
    expect(paramValue(w8, 'world')).toBe(8);
    expect(parseSpec(w8).parallel).toMatchObject({ kind: 'fsdp2', world: 8, reshard_after_forward: false });
    expect(parseSpec(withParam({ model: gpt }, 'world', 4)).parallel).toMatchObject({ kind: 'fsdp2', world: 4 });
  });
});

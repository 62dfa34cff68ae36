import { describe, expect, it } from 'vitest';
import { checkSpec, parseSpec, parseSize, SpecError, LIMITS } from '../../main/contract/spec';
import { withParam } from '../../main/contract/sweep_params';

function issues(input: unknown): string[] {
  const r = checkSpec(input);
  if (r.ok) throw new Error(`expected ${JSON.stringify(input)} to be rejected`);
  return r.issues;
}

describe('experiment spec', () => {
  it('fills the parity protocol defaults', () => {
    const s = parseSpec({});
    expect(s.model).toEqual({ kind: 'mlp', in: 1024, hidden: 2048, depth: 2, out: 10 });
    expect(s.batch).toBe(256);
    expect(s.iterations).toBe(2);
    expect(s.accum).toBe(1);
    expect(s.checkpoint).toBe('none');
    expect(s.precision).toBe('fp32');
    expect(s.set_to_none).toBe(true);
    expect(s.mode).toBe('train');
    expect(s.loss).toBe('sum');
    expect(s.capacity).toBeNull();
    expect(s.device).toBe('sim:h100-80gb');
    expect(parseSpec({ model: { kind: 'residual' } }).model).toEqual({ kind: 'residual', dim: 512, depth: 20 });
  });

  it('accepts every documented form', () => {
    const s = parseSpec({
      model: { kind: 'residual', dim: 512, depth: 20 },
      batch: 128,
      checkpoint: { every: 4 },
      precision: 'bf16',
      optimizer: { kind: 'adam', lr: 0.001, foreach: true },
      set_to_none: false,
      mode: 'loss_accumulation',
      keep_loss_graph: false,
      loss: 'cross_entropy',
      alloc_conf: 'max_split_size_mb:128,expandable_segments:True',
      device: 'cuda:0',
      capacity: '20GiB',
    });
    expect(s.checkpoint).toEqual({ every: 4 });
    expect(s.optimizer).toEqual({ kind: 'adam', lr: 0.001, foreach: true, weight_decay: 0 });
    expect(s.capacity).toBe(20 * 2 ** 30);
    expect(parseSpec({ optimizer: 'sgd' }).optimizer.kind).toBe('sgd');
    expect(parseSpec({ optimizer: 'adamw' }).optimizer).toMatchObject({ weight_decay: 0.01 });
    expect(parseSpec({ capacity: 2 ** 31 }).capacity).toBe(2 ** 31);
    expect(parseSpec({ device: 'sim:custom:24GiB' }).device).toBe('sim:custom:24GiB');
  });

  it('is idempotent: a parsed spec parses to itself', () => {
    const s = parseSpec({ checkpoint: 'sqrt', optimizer: 'sgd', capacity: '1.5 GB', model: { kind: 'residual' } });
    expect(parseSpec(JSON.parse(JSON.stringify(s)))).toEqual(s);
  });

  it.each([
    [{ batch: 0 }, 'batch', `from 1 to ${LIMITS.batch}`, '(got 0)'],
    [{ batch: -8 }, 'batch', `from 1 to ${LIMITS.batch}`, '(got -8)'],
    [{ batch: 1e12 }, 'batch', `from 1 to ${LIMITS.batch}`, '(got 1000000000000)'],
    [{ batch: 2.5 }, 'batch', 'integer', '(got 2.5)'],
    [{ batch: '256' }, 'batch', 'integer', '(got "256")'],
    [{ model: { kind: 'mlp', depth: 0 } }, 'model.depth', `from 1 to ${LIMITS.depth}`, ''],
    [{ model: { kind: 'mlp', depth: 100000 } }, 'model.depth', `from 1 to ${LIMITS.depth}`, '(got 100000)'],
    [{ model: { kind: 'residual', dim: -1 } }, 'model.dim', 'from 1 to', '(got -1)'],
    [{ iterations: 0 }, 'iterations', 'from 1 to', ''],
    [{ accum: 0 }, 'accum', 'from 1 to', ''],
    [{ precision: 'fp8' }, 'precision', '"fp32", "tf32", "fp16", "bf16"', '(got "fp8")'],
    [{ mode: 'eval' }, 'mode', '"train", "inference", "loss_accumulation"', ''],
    [{ loss: 'hinge' }, 'loss', '"sum", "mse", "cross_entropy"', ''],
    [{ checkpoint: 'all' }, 'checkpoint', '"none", "block", "sqrt" or {"every": n}', ''],
    [{ model: { kind: 'residual' }, checkpoint: { every: 0 } }, 'checkpoint.every', 'from 1 to', ''],
    [{ checkpoint: 'block' }, 'checkpoint', 'models with blocks: residual, gpt, llama', '(got "block")'],
    [{ optimizer: 'lion' }, 'optimizer', '"none", "sgd", "adam", "adamw"', ''],
    [{ optimizer: { kind: 'adam', lr: 0 } }, 'optimizer.lr', '> 0', ''],
    [{ set_to_none: 'yes' }, 'set_to_none', 'true or false', ''],
    [{ capacity: '20 GiBs' }, 'capacity', 'not a size', ''],
    [{ capacity: '20XB' }, 'capacity', 'KiB, MiB, GiB or TiB', ''],
    [{ capacity: '0GiB' }, 'capacity', 'from 1 MiB to 1 PiB', ''],
    [{ capacity: -5 }, 'capacity', 'from 1 MiB to 1 PiB', ''],
    [{ capacity: '5 PiB' }, 'capacity', 'not a size', ''],
    [{ device: 'tpu:0' }, 'device', '"sim:<preset>"', '(got "tpu:0")'],
    [{ alloc_conf: 'max_split_size:128' }, 'alloc_conf', "Unrecognized key 'max_split_size'", ''],
    [{ alloc_conf: 7 }, 'alloc_conf', 'must be a string', ''],
  ])('rejects %j naming %s and the allowed values', (input, field, allowed, got) => {
    const list = issues(input);
    expect(list).toHaveLength(1);
    expect(list[0].startsWith(`${field}: `)).toBe(true);
    expect(list[0]).toContain(allowed);
    if (got) expect(list[0]).toContain(got);
  });

  it('rejects unknown model kinds and a missing kind', () => {
    expect(issues({ model: { kind: 'cnn' } })[0]).toBe('model.kind must be "mlp", "residual", "gpt", "llama" or "hf" (got "cnn")');
    expect(issues({ model: { depth: 3 } })[0]).toBe('model.kind must be "mlp", "residual", "gpt", "llama" or "hf" (missing)');
    expect(issues({ model: { kind: 'residual', hidden: 5 } })[0]).toBe('model: unknown key "hidden"');
  });

  it('rejects unknown keys, listing the allowed ones', () => {
    const [msg] = issues({ bach: 64 });
    expect(msg).toContain('unknown key "bach"');
    expect(msg).toContain('allowed: model, batch');
  });

  it('checks checkpoint intervals against the depth', () => {
    expect(issues({ model: { kind: 'residual', depth: 5 }, checkpoint: { every: 6 } })[0]).toBe(
      'checkpoint.every: must be at most model.depth (5) (got 6)',
    );
  });

  it('rejects non-objects', () => {
    expect(issues(null)[0]).toContain('expected object');
    expect(issues([1, 2])[0]).toContain('expected object');
    expect(issues('batch=5')[0]).toContain('expected object');
  });

  it('reports every bad field at once and throws SpecError from parseSpec', () => {
    expect(issues({ batch: 0, depth: 3, precision: 'x' })).toHaveLength(3);
    expect(() => parseSpec({ batch: 0 })).toThrow(SpecError);
    expect(() => parseSpec({ batch: 0 })).toThrow(/invalid spec: batch: must be an integer/);
  });

  it('parses sizes in decimal and binary units', () => {
    expect(parseSize('20GiB')).toBe(20 * 2 ** 30);
    expect(parseSize('1.5 GB')).toBe(1.5e9);
    expect(parseSize('512mib')).toBe(512 * 2 ** 20);
    expect(parseSize('4096')).toBe(4096);
    expect(parseSize('12 parsecs')).toBeNull();
    expect(parseSize('-1GiB')).toBeNull();
  });

  it('sets sweep parameters in the right place', () => {
    expect(withParam({ batch: 2 }, 'depth', 8)).toEqual({ batch: 2, model: { kind: 'mlp', depth: 8 } });
    expect(withParam({ model: { kind: 'residual', dim: 64 } }, 'dim', 128)).toEqual({ model: { kind: 'residual', dim: 128 } });
    expect(withParam({}, 'checkpoint', { every: 2 })).toEqual({ checkpoint: { every: 2 } });
  });
});

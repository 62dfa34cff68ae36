// The twins a prediction or an OOM's requirement runs on keep the card's GPU model
// ("sim:custom:SIZE@MODEL"): the engine takes cuBLAS's workspace, SM counts and the compute
// capability from the device's name, so a generic "Simulated GPU" of the same size would read
// an H100 job's need low by the Hopper workspaces it leaves out. Real addon throughout.
import { describe, expect, it } from 'vitest';
import { native } from '../helpers/addon';
import { checkSpec, parseSpec } from '../../main/contract/spec';
import { cardMemory } from '../../main/runner/card_memory';
import { Predictor } from '../../main/runner/predict';
import { deviceModel, presetForCard, twinDevice } from '../../main/runner/predict_device';
import { requirementOf } from '../../main/runner/remedies';
import { simulate, unboundedDevices } from '../../main/runner/simulate';

/** A small GPT at a batch past an H100's 80 GB and within an H200's 141 GB. */
const GPT = { model: { kind: 'gpt', vocab: 50257, seq: 1024, dim: 512, depth: 4, heads: 8 }, batch: 96, device: 'sim:h100-80gb' } as const;

describe('the unbounded twin', () => {
  it("measures an H100 job's need on an H100-model device: the peak an H200 reaches, not the generic device's", async () => {
    const spec = parseSpec(GPT);
    const own = await simulate(native, spec, spec.device);
    expect(own.status).toBe('oom');
    const need = await requirementOf(native, spec, own);
    expect(need).not.toBeNull();
    // Same architecture (sm90: 32 MiB cuBLAS workspaces, 132 SMs), room enough: the same peak.
    const h200 = await simulate(native, parseSpec({ ...GPT, device: 'sim:h200-141gb' }), 'sim:h200-141gb');
    expect(h200.status).toBe('done');
    expect(need!.outcome.peak_reserved).toBe(h200.peak_reserved);
    const card = cardMemory(native, spec.device);
    expect(need!.verdict.on_card).toBe(h200.peak_reserved + card.context);
    // A generic device of the same size leaves out the Hopper workspaces: it reads low.
    const generic = await simulate(native, spec, `sim:custom:${2 ** 40}`);
    expect(generic.status).toBe('done');
    expect(generic.peak_reserved).toBeLessThan(h200.peak_reserved);
    // The prediction says the same.
    const p = await new Predictor(native).predict(spec);
    expect(p.status).toBe('oom');
    expect(p.verdict!.on_card).toBe(h200.peak_reserved + card.context);
  });

  it("keeps each spec's model: a preset's, a sized preset's, none for a generic size", () => {
    expect(unboundedDevices(native, 'sim:t4-16gb')[0]).toBe(`sim:custom:${2 ** 40}@t4-16gb`);
    expect(unboundedDevices(native, 'sim:custom:24GiB@a100-80gb')[0]).toBe(`sim:custom:${2 ** 40}@a100-80gb`);
    expect(unboundedDevices(native, 'sim:custom:24GiB')[0]).toBe(`sim:custom:${2 ** 40}`);
    expect(deviceModel(native, 'sim:custom:24GiB')).toBeNull();
    expect(twinDevice(native, 'sim:rtx4090-24gb', 1 << 30)).toBe(`sim:custom:${1 << 30}@rtx4090-24gb`);
  });
});

describe('the sized preset device in specs', () => {
  it('is a spec device: SIZE on the card, no context, and runs as the preset it names', async () => {
    const spec = parseSpec({ ...GPT, batch: 4, device: 'sim:custom:24GiB@h100-80gb' });
    expect(cardMemory(native, spec.device)).toEqual({ total: 24 * 2 ** 30, context: 0 });
    const sized = await simulate(native, spec, spec.device);
    const preset = await simulate(native, { ...spec, device: 'sim:h100-80gb' }, 'sim:h100-80gb');
    expect(sized.status).toBe('done');
    expect(sized.peak_reserved).toBe(preset.peak_reserved);
  });

  it('refuses a sized preset of a size out of bounds or a malformed model', () => {
    expect(checkSpec({ ...GPT, device: 'sim:custom:0@h100-80gb' }).ok).toBe(false);
    expect(checkSpec({ ...GPT, device: 'sim:custom:24GiB@H100 80GB' }).ok).toBe(false);
    expect(checkSpec({ ...GPT, device: 'sim:custom:24GiB@cuda:0' }).ok).toBe(false);
  });

  it('an unknown preset is the device layer’s error when the run starts', async () => {
    const spec = parseSpec({ ...GPT, device: 'sim:custom:24GiB@h100' });
    await expect(simulate(native, spec, spec.device)).rejects.toThrow(/no simulated preset named 'h100'/);
  });
});

describe("a CUDA card's twin", () => {
  it("takes the preset named like the card, else none (the card's own name then)", () => {
    const devices = native.listDevices();
    expect(presetForCard('NVIDIA H100 80GB HBM3', devices)).toBe('h100-80gb');
    expect(presetForCard('NVIDIA A100 80GB', devices)).toBe('a100-80gb');
    // The PCIe H100 has fewer SMs than the preset's SXM part: no match, its own name rules.
    expect(presetForCard('NVIDIA H100 PCIe', devices)).toBeNull();
    expect(presetForCard('NVIDIA L40S', devices)).toBeNull();
    expect(presetForCard('NVIDIA GeForce RTX 5090', devices)).toBeNull();
  });
});

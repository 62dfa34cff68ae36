// The experiment panel with the transformer families: switching family brings that family's
// fields and defaults, presets fill them, fine-tuning and generation controls appear where
// they apply and go into the spec, and the live prediction follows (a real host simulates).
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { cleanup, fireEvent, render, screen, waitFor } from '@testing-library/svelte';
import ExperimentPanel from '../../renderer/src/panels/ExperimentPanel.svelte';
import { defaultForm } from '../../renderer/src/lib/specForm';
import { api } from '../../renderer/src/lib/api';
import { reactive } from './reactive.svelte';
import { hostTransport, type HostTransport } from '../helpers/host_transport';

let env: HostTransport;
beforeAll(() => {
  env = hostTransport('vramlab-families-');
});
afterAll(() => env.close());
afterEach(() => cleanup());

function setup() {
  const onrun = vi.fn();
  const form = reactive(defaultForm());
  const predict = vi.fn((spec) => api.predict(env.transport, spec, 'panel'));
  render(ExperimentPanel, { props: { form, onrun, predict } });
  return { onrun, predict, form };
}
const byId = <T extends HTMLElement = HTMLInputElement>(id: string) => screen.getByTestId(id) as T;
const select = (id: string, value: string) => fireEvent.change(byId<HTMLSelectElement>(id), { target: { value } });
const type = (id: string, value: string) => fireEvent.input(byId(id), { target: { value } });
const lastSpec = (onrun: ReturnType<typeof vi.fn>) => onrun.mock.calls.at(-1)![0];
const titleBytes = (id: string) =>
  Number(
    byId(id)
      .getAttribute('title')!
      .replace(/[^0-9]/g, ''),
  );

describe('ExperimentPanel: model families', () => {
  it('switches to GPT: its fields, batch 8, cross-entropy only, no checkpoint reset of blocks', async () => {
    const { onrun } = setup();
    expect(screen.queryByTestId('field-vocab')).toBeNull();
    await select('field-modelKind', 'gpt');
    for (const [k, v] of Object.entries({ vocab: '50257', seq: '1024', dim: '768', depth: '12', heads: '12' }))
      expect(byId(`field-${k}`).value).toBe(v);
    expect(screen.queryByTestId('field-in')).toBeNull();
    expect(byId('field-batch').value).toBe('8');
    expect([...byId<HTMLSelectElement>('field-loss').options].map((o) => o.value)).toEqual(['cross_entropy']);
    expect(byId<HTMLSelectElement>('field-preset').value).toBe('gpt2');
    expect(byId('field-checkpoint')).toBeTruthy(); // GPT has blocks
    await fireEvent.click(byId('run'));
    expect(lastSpec(onrun)).toMatchObject({
      model: { kind: 'gpt', vocab: 50257, seq: 1024, dim: 768, depth: 12, heads: 12 },
      batch: 8,
      loss: 'cross_entropy',
    });
    // Back to the MLP: its defaults and loss again, no checkpointing.
    await select('field-modelKind', 'mlp');
    expect(byId('field-batch').value).toBe('256');
    expect(screen.queryByTestId('field-checkpoint')).toBeNull();
    expect(screen.queryByTestId('finetune')).toBeNull();
  });

  it('fills a preset and shows the rules between fields where they break', async () => {
    setup();
    await select('field-modelKind', 'llama');
    await select('field-preset', 'llama3-8b');
    for (const [k, v] of Object.entries({
      vocab: '128256',
      seq: '8192',
      dim: '4096',
      depth: '32',
      heads: '32',
      kv_heads: '8',
      ffn: '14336',
    }))
      expect(byId(`field-${k}`).value).toBe(v);
    await type('field-kv_heads', '5');
    expect(byId('error-kv_heads').textContent).toMatch(/must divide model.heads \(32\) evenly .*\(got 5\)/);
    expect(byId<HTMLSelectElement>('field-preset').value).toBe('');
    expect(byId<HTMLButtonElement>('run').disabled).toBe(true);
    await type('field-kv_heads', '8');
    await type('field-heads', '3');
    expect(byId('error-heads').textContent).toMatch(/must divide model.dim \(4096\)/);
  });

  it("offers LoRA with rank, alpha and the family's targets, and predicts less memory than full training", async () => {
    const { onrun } = setup();
    await select('field-modelKind', 'gpt');
    for (const [k, v] of Object.entries({ vocab: '8192', seq: '256', dim: '256', depth: '4', heads: '4' })) await type(`field-${k}`, v);
    await waitFor(() => expect(byId('predicted-peak')).toBeTruthy());
    await waitFor(() => expect(byId('prediction').getAttribute('data-pending')).toBe('false'));
    const full = titleBytes('predicted-peak');
    await select('field-finetune', 'lora');
    expect(['attn', 'proj', 'fc', 'mlp_proj'].map((t) => !!screen.queryByTestId(`field-target-${t}`))).toEqual([true, true, true, true]);
    expect(byId('field-target-attn').checked).toBe(true);
    await fireEvent.click(byId('field-target-fc'));
    await type('field-rank', '16');
    await waitFor(() => expect(titleBytes('predicted-peak')).toBeLessThan(full));
    expect(byId('predicted-params').textContent).toMatch(/trainable/);
    await fireEvent.click(byId('run'));
    expect(lastSpec(onrun).finetune).toEqual({ method: 'lora', rank: 16, targets: ['attn', 'fc'] });
    await fireEvent.click(byId('field-target-attn'));
    await fireEvent.click(byId('field-target-fc'));
    expect(byId('error-targets').textContent).toMatch(/at least one/);
    await select('field-finetune', 'freeze');
    await type('field-blocks', '9');
    expect(byId('error-blocks').textContent).toMatch(/at most model.depth \(4\)/);
  });

  it('generates: prompt, new tokens and cache controls; the static cache holds more after the prefill', async () => {
    const { onrun } = setup();
    await select('field-modelKind', 'gpt');
    for (const [k, v] of Object.entries({ vocab: '8192', seq: '512', dim: '256', depth: '4', heads: '4' })) await type(`field-${k}`, v);
    await select('field-mode', 'generate');
    expect(screen.queryByTestId('field-optimizer')).toBeNull();
    expect(screen.queryByTestId('finetune')).toBeNull();
    expect(byId('field-prompt').value).toBe('128');
    await type('field-new_tokens', '400');
    expect(byId('error-new_tokens').textContent).toMatch(/prompt \+ new_tokens must be at most model.seq \(512\)/);
    await type('field-new_tokens', '128');
    await waitFor(() => expect(byId('prediction').getAttribute('data-pending')).toBe('false'));
    const reading = (k: string) =>
      Number(
        byId('predicted-readings')
          .querySelector(`li[data-key="${k}"]`)!
          .querySelector('.num')!
          .getAttribute('title')!
          .replace(/[^0-9]/g, ''),
      );
    await waitFor(() => expect(reading('after_prefill')).toBeGreaterThan(0));
    const dynamic = reading('after_prefill');
    await select('field-cache', 'static');
    await waitFor(() => expect(reading('after_prefill')).toBeGreaterThan(dynamic));
    await fireEvent.click(byId('run'));
    expect(lastSpec(onrun)).toMatchObject({ mode: 'generate', prompt: 128, new_tokens: 128, cache: 'static' });
  });

  it('offers generation only for the transformer families', async () => {
    setup();
    expect([...byId<HTMLSelectElement>('field-mode').options].map((o) => o.value)).not.toContain('generate');
    await select('field-modelKind', 'llama');
    expect([...byId<HTMLSelectElement>('field-mode').options].map((o) => o.value)).toContain('generate');
  });
});

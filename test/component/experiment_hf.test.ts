// The experiment panel with a Hugging Face model: a preset or a config.json opened or dropped
// onto the panel, the config's main fields shown, LoRA offering that architecture's own
// modules, the modes and checkpointing HF models support, and the spec the form sends.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { cleanup, fireEvent, render, screen, waitFor } from '@testing-library/svelte';
import ExperimentPanel from '../../renderer/src/panels/ExperimentPanel.svelte';
import { defaultForm } from '../../renderer/src/lib/specForm';
import { parseSpec } from '../../main/contract/spec';
import { reactive } from './reactive.svelte';

afterEach(() => cleanup());

const fixtureText = (name: string) => readFileSync(path.resolve(import.meta.dirname, `../fixtures/hf/${name}.config.json`), 'utf8');
const configFile = (name: string, text = fixtureText(name)) => new File([text], `${name}.json`, { type: 'application/json' });

function setup() {
  const onrun = vi.fn();
  const form = reactive(defaultForm());
  render(ExperimentPanel, { props: { form, onrun } });
  return { onrun, form };
}
const byId = <T extends HTMLElement = HTMLInputElement>(id: string) => screen.getByTestId(id) as T;
const select = (id: string, value: string) => fireEvent.change(byId<HTMLSelectElement>(id), { target: { value } });
const detail = (key: string) => byId(`detail-${key}`).textContent;
const options = (id: string) => [...byId<HTMLSelectElement>(id).options].map((o) => o.value);
const lastSpec = (onrun: ReturnType<typeof vi.fn>) => onrun.mock.calls.at(-1)![0];

async function openFile(file: File) {
  await fireEvent.change(byId('field-config-file'), { target: { files: [file] } });
}

describe('ExperimentPanel: Hugging Face models', () => {
  it('starts from a preset, shows its main fields, and runs it by name', async () => {
    const { onrun } = setup();
    await select('field-modelKind', 'hf');
    await select('field-preset', 'qwen2.5-0.5b');
    expect(detail('architecture')).toBe('Qwen2ForCausalLM (qwen2)');
    expect(detail('layers')).toBe('24');
    expect(detail('hidden')).toBe('896');
    expect(detail('heads')).toBe('14 / 2');
    expect(detail('vocab')).toBe('151,936');
    expect(detail('tied')).toBe('yes');
    expect(detail('parameters')).toBe('494,032,768');
    // The model computes its own loss: said, not offered as a choice.
    expect(screen.queryByTestId('field-loss')).toBeNull();
    expect(byId('own-loss').textContent).toContain('ForCausalLMLoss');
    expect(byId('field-seq').value).toBe('2048');
    await fireEvent.click(byId('run'));
    expect(lastSpec(onrun).model).toEqual({ kind: 'hf', seq: 2048, attn_implementation: 'sdpa', preset: 'qwen2.5-0.5b' });
  });

  it('opens a config.json: its fields, its LoRA modules, and the config in the spec', async () => {
    const { onrun } = setup();
    await select('field-modelKind', 'hf');
    await openFile(configFile('Phi-3.5-mini-instruct'));
    await waitFor(() => expect(detail('architecture')).toBe('Phi3ForCausalLM (phi3)'));
    expect(detail('heads')).toBe('32 / 32');
    expect(detail('mlp')).toBe('8,192');
    expect(byId<HTMLSelectElement>('field-preset').selectedOptions[0].textContent).toBe('file: Phi-3.5-mini-instruct.json');
    await select('field-finetune', 'lora');
    // Phi-3's fused projections, PEFT's default (qkv_proj) checked.
    expect(screen.getByTestId('field-target-qkv_proj')).toBeTruthy();
    expect(screen.queryByTestId('field-target-q_proj')).toBeNull();
    expect((byId('field-target-qkv_proj') as HTMLInputElement).checked).toBe(true);
    await fireEvent.click(byId('field-target-gate_up_proj'));
    await fireEvent.click(byId('run'));
    const spec = lastSpec(onrun);
    expect(spec.model.config).toEqual(JSON.parse(fixtureText('Phi-3.5-mini-instruct')));
    expect(spec.finetune).toEqual({ method: 'lora', rank: 8, targets: ['qkv_proj', 'gate_up_proj'] });
    expect(parseSpec(spec).finetune).toMatchObject({ alpha: 16, dropout: 0 });
  });

  it('offers eager attention and LoRA dropout, and sends them in the spec', async () => {
    const { onrun } = setup();
    await select('field-modelKind', 'hf');
    await select('field-preset', 'qwen2.5-0.5b');
    expect(options('field-attn_implementation')).toEqual(['sdpa', 'eager']);
    await select('field-attn_implementation', 'eager');
    await select('field-finetune', 'lora');
    expect(byId('field-dropout').value).toBe('0');
    await fireEvent.input(byId('field-dropout'), { target: { value: '0.1' } });
    await fireEvent.click(byId('run'));
    const spec = lastSpec(onrun);
    expect(spec.model.attn_implementation).toBe('eager');
    expect(spec.finetune).toMatchObject({ method: 'lora', dropout: 0.1 });
    expect(parseSpec(spec).finetune).toMatchObject({ dropout: 0.1 });
    // A dropout of 1 is refused where it is typed (peft's range is [0, 1)).
    await fireEvent.input(byId('field-dropout'), { target: { value: '1' } });
    await fireEvent.click(byId('run'));
    await waitFor(() => expect(screen.getByTestId('error-dropout').textContent).toMatch(/1/));
  });

  it('takes a config.json dropped onto the panel, MoE experts included', async () => {
    setup();
    await select('field-modelKind', 'hf');
    await fireEvent.drop(byId('config-drop'), { dataTransfer: { files: [configFile('Qwen3-30B-A3B')] } });
    await waitFor(() => expect(detail('architecture')).toBe('Qwen3MoeForCausalLM (qwen3_moe)'));
    expect(detail('experts')).toBe('128, 8 per token, width 768');
    expect(detail('layers')).toBe('48');
  });

  it('says why a file is refused: not JSON, or an architecture it cannot build', async () => {
    const { onrun } = setup();
    await select('field-modelKind', 'hf');
    await openFile(configFile('bad', '{"architectures": ['));
    await waitFor(() => expect(byId('error-modelConfig').textContent).toContain('bad.json is not JSON'));
    await openFile(configFile('bert', JSON.stringify({ architectures: ['BertForMaskedLM'], hidden_size: 768 })));
    await waitFor(() => expect(byId('error-modelConfig').textContent).toContain('architecture "BertForMaskedLM" is not supported'));
    expect(screen.queryByTestId('model-details')).toBeNull();
    expect((byId('run') as HTMLButtonElement).disabled).toBe(true);
    await fireEvent.click(byId('run'));
    expect(onrun).not.toHaveBeenCalled();
  });

  it('offers only what HF models support: train or generate, no or per-block checkpointing, the dynamic cache', async () => {
    const { form } = setup();
    form.checkpoint = 'sqrt';
    await select('field-modelKind', 'hf');
    expect(options('field-mode')).toEqual(['train', 'generate']);
    expect(options('field-checkpoint')).toEqual(['none', 'block']);
    expect(form.checkpoint).toBe('none');
    await select('field-mode', 'generate');
    expect(options('field-cache')).toEqual(['dynamic']);
  });
});

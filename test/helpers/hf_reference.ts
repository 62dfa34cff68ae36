// test/refs/hf_reference.json: runs measured by hf_protocol.py, each spec in the protocol's own
// format ({"hf": {"arch", "config"}, "batch", "seq", ...}). protocolToSpec says what each of them
// is in our spec: the config with its architecture, generation's prompt as the protocol's seq
// (the model's seq then bounds prompt + new_tokens), checkpoint "hf" as "block".
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { SpecInput } from '../../main/contract/spec';

export interface ProtocolSpec {
  hf: { arch: string; config: Record<string, unknown>; attn?: 'sdpa' | 'eager' };
  batch: number;
  seq: number;
  weights?: 'fp32' | 'bf16' | 'fp16';
  precision?: 'fp32' | 'bf16' | 'fp16';
  optimizer?: string | { kind: string };
  finetune?: 'full' | { method: 'lora'; rank: number; alpha?: number; targets: string[]; dropout?: number };
  checkpoint?: 'none' | 'hf';
  mode?: 'train' | 'generate';
  new_tokens?: number;
  iterations?: number;
}

export interface ReferenceRun {
  spec: ProtocolSpec;
  readings: Record<string, number> | null;
  oom: string | null;
  trainable: number;
  total: number;
  out_shape?: number[];
}

export function hfReference(): { measured_with: Record<string, string>; runs: ReferenceRun[] } {
  return JSON.parse(readFileSync(path.resolve(import.meta.dirname, '../refs/hf_reference.json'), 'utf8'));
}

export function protocolToSpec(p: ProtocolSpec): SpecInput {
  const generate = p.mode === 'generate';
  const ft = p.finetune;
  const opt = typeof p.optimizer === 'object' ? p.optimizer.kind : (p.optimizer ?? 'adamw');
  return {
    model: {
      kind: 'hf',
      config: { architectures: [p.hf.arch], ...p.hf.config },
      seq: generate ? p.seq + (p.new_tokens ?? 0) : p.seq,
      attn_implementation: p.hf.attn ?? 'sdpa',
    },
    batch: p.batch,
    weights: p.weights ?? 'fp32',
    precision: p.precision ?? 'fp32',
    optimizer: opt as 'adamw',
    checkpoint: p.checkpoint === 'hf' ? 'block' : 'none',
    mode: generate ? 'generate' : 'train',
    ...(generate ? { prompt: p.seq, new_tokens: p.new_tokens } : { iterations: p.iterations ?? 2 }),
    finetune:
      ft && ft !== 'full'
        ? { method: 'lora', rank: ft.rank, alpha: ft.alpha ?? 2 * ft.rank, targets: ft.targets, dropout: ft.dropout ?? 0 }
        : { method: 'full' },
  };
}

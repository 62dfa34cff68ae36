// What a mode reads of a spec: the one table the panel (which fields it shows and sends),
// the spec's checks (fine-tuning a mode cannot use) and the exports (which CSV cells and
// JSON keys a run carries) all ask. Read from the engine's loops (native/engine/experiment/):
// generation and inference run under no_grad, so nothing of training (optimizer, accumulation,
// checkpointing, zero_grad) touches them; only training reads generation's prompt and cache never.
import type { FamilyDescription } from './family';
import type { FinetuneMethod } from './finetune';
import type { MODES } from './spec_fields';

export type Mode = (typeof MODES)[number];

/** Spec keys that only some modes read. Every other key (model, mode, alloc_conf, device,
 *  capacity, history) applies to every mode. */
export const MODE_KEYS = [
  'iterations',
  'accum',
  'checkpoint',
  'optimizer',
  'set_to_none',
  'keep_loss_graph',
  'loss',
  'finetune',
  'shapes',
  'prompt',
  'new_tokens',
  'cache',
  'empty_cache_every',
  'parallel',
] as const;
export type ModeKey = (typeof MODE_KEYS)[number];

const READS: Record<Mode, readonly ModeKey[]> = {
  train: ['iterations', 'accum', 'checkpoint', 'optimizer', 'set_to_none', 'loss', 'finetune', 'shapes', 'empty_cache_every', 'parallel'],
  // One forward under no_grad; the loss picks the labels the input batch carries.
  inference: ['loss', 'finetune'],
  // Forward passes whose losses are summed, graphs kept: checkpointing and freezing change what they save.
  loss_accumulation: ['iterations', 'checkpoint', 'keep_loss_graph', 'loss', 'finetune'],
  generate: ['prompt', 'new_tokens', 'cache', 'finetune'],
};

/** Whether `mode` reads spec key `key` (keys outside MODE_KEYS: always). */
export function modeReads(mode: string, key: string): boolean {
  if (!(MODE_KEYS as readonly string[]).includes(key)) return true;
  return (READS[mode as Mode] ?? READS.train).includes(key as ModeKey);
}

/** The fine-tuning methods a mode can use with a family. Freezing only changes what
 *  gradients and saved tensors exist, so it needs a graph (train, loss_accumulation); LoRA
 *  adapters in inference or generation only where the family serves them (hf: PEFT's
 *  generate runs the adapters unmerged). Non-transformer families train in full. */
export function finetuneMethodsFor(mode: string, fam: Pick<FamilyDescription, 'transformer' | 'loraServing'>): FinetuneMethod[] {
  if (!fam.transformer) return ['full'];
  if (mode === 'train' || mode === 'loss_accumulation') return ['full', 'freeze', 'lora'];
  return fam.loraServing ? ['full', 'lora'] : ['full'];
}

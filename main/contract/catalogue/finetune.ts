// Fine-tuning methods (transformer families only): full training, freezing the embeddings
// and the first k blocks, or LoRA adapters on chosen projections with the base frozen.
import { LIMITS } from './limits';

export const FINETUNE_METHODS = [
  { value: 'full', label: 'Full (every parameter trains)' },
  { value: 'freeze', label: 'Freeze embeddings + first k blocks' },
  { value: 'lora', label: 'LoRA adapters (base frozen)' },
] as const;
export type FinetuneMethod = (typeof FINETUNE_METHODS)[number]['value'];

export const FINETUNE_FIELDS = {
  blocks: {
    type: 'int',
    min: 0,
    max: LIMITS.depth,
    default: 1,
    label: 'Frozen blocks',
    meaning: 'freeze: the first k blocks (and the embeddings) get no gradients',
    unit: 'blocks',
  },
  rank: {
    type: 'int',
    min: 1,
    max: LIMITS.rank,
    default: 8,
    label: 'LoRA rank',
    meaning: 'r: adapters A (r x in) and B (out x r), in fp32',
  },
  alpha: {
    type: 'number',
    min: 0,
    max: 1e6,
    minExclusive: true,
    default: 16,
    label: 'LoRA alpha',
    meaning: 'output scale alpha / r (default 2 x rank)',
  },
  dropout: {
    type: 'number',
    min: 0,
    max: 1,
    maxExclusive: true,
    default: 0,
    label: 'LoRA dropout',
    meaning: "peft's lora_dropout: nn.Dropout on the adapter's input (hf models)",
  },
} as const;

/** alpha's default follows the rank, as torch_protocol_finetune.py has it. */
export const loraAlphaDefault = (rank: number): number => 2 * rank;

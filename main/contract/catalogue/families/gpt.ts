// gpt: GPT-2 as nanoGPT writes it: token + learned position embeddings, pre-LayerNorm blocks
// with a fused qkv Linear, causal scaled-dot-product attention, a GELU(tanh) MLP of width
// 4 x dim, a final LayerNorm and an lm_head tied to the token embedding.
import { defineFamily, headChecks } from '../family';
import { LIMITS } from '../limits';

export const gpt = defineFamily({
  kind: 'gpt',
  label: 'GPT-2 style transformer',
  summary: 'nanoGPT: learned positions, LayerNorm, fused qkv, GELU MLP, tied lm_head.',
  fields: {
    vocab: {
      type: 'int',
      min: 1,
      max: LIMITS.vocab,
      default: 50257,
      label: 'Vocabulary',
      meaning: 'rows of the token embedding and columns of the logits',
      unit: 'tokens',
    },
    seq: {
      type: 'int',
      min: 1,
      max: LIMITS.seq,
      default: 1024,
      label: 'Sequence length',
      meaning: 'tokens per sample, and rows of the position embedding',
      unit: 'tokens',
    },
    dim: {
      type: 'int',
      min: 8,
      max: LIMITS.features,
      default: 768,
      label: 'Width (dim)',
      meaning: 'the embedding width n_embd',
      unit: 'features',
    },
    depth: {
      type: 'int',
      min: 1,
      max: LIMITS.depth,
      default: 12,
      label: 'Depth (blocks)',
      meaning: 'number of transformer blocks n_layer',
      unit: 'blocks',
    },
    heads: {
      type: 'int',
      min: 1,
      max: LIMITS.heads,
      default: 12,
      label: 'Attention heads',
      meaning: 'n_head; head_dim = dim / heads',
      unit: 'heads',
    },
  },
  specDefaults: { batch: 8, loss: 'cross_entropy' },
  losses: ['cross_entropy'],
  blocks: true,
  transformer: true,
  roles: { depth: 'depth', seq: 'seq', widths: ['dim', 'vocab'], derivedWidths: (m) => [4 * m.dim] },
  loraTargets: [
    { value: 'attn', label: 'attn (c_attn, fused qkv)' },
    { value: 'proj', label: 'proj (attention c_proj)' },
    { value: 'fc', label: 'fc (MLP c_fc)' },
    { value: 'mlp_proj', label: 'mlp_proj (MLP c_proj)' },
  ],
  loraDefaultTargets: ['attn'],
  presets: [
    { id: 'gpt2', label: 'GPT-2 small (124M)', model: { vocab: 50257, seq: 1024, dim: 768, depth: 12, heads: 12 } },
    { id: 'gpt2-medium', label: 'GPT-2 medium (350M)', model: { vocab: 50257, seq: 1024, dim: 1024, depth: 24, heads: 16 } },
    { id: 'gpt2-large', label: 'GPT-2 large (774M)', model: { vocab: 50257, seq: 1024, dim: 1280, depth: 36, heads: 20 } },
  ],
  check: (m) => headChecks(m.dim, m.heads),
  name: (m) => `gpt ${m.dim}x${m.depth} seq ${m.seq}`,
  parameters: (m) => {
    const C = m.dim;
    const block = 2 * C + (3 * C * C + 3 * C) + (C * C + C) + 2 * C + (4 * C * C + 4 * C) + (4 * C * C + C);
    return m.vocab * C + m.seq * C + m.depth * block + 2 * C; // lm_head shares wte's weight
  },
});

// llama: token embedding, RMSNorm (computed in fp32), rotary embeddings on q and k,
// grouped-query attention (k and v repeated to the query heads), SwiGLU MLP, an untied
// output head, no biases.
import { defineFamily, headChecks } from '../family';
import { LIMITS } from '../limits';

export const llama = defineFamily({
  kind: 'llama',
  label: 'Llama style transformer',
  summary: 'RMSNorm, rotary positions, grouped-query attention, SwiGLU MLP, untied head.',
  fields: {
    vocab: {
      type: 'int',
      min: 1,
      max: LIMITS.vocab,
      default: 32000,
      label: 'Vocabulary',
      meaning: 'rows of the token embedding and columns of the logits',
      unit: 'tokens',
    },
    seq: {
      type: 'int',
      min: 1,
      max: LIMITS.seq,
      default: 2048,
      label: 'Sequence length',
      meaning: 'tokens per sample, and rows of the rotary tables',
      unit: 'tokens',
    },
    dim: { type: 'int', min: 8, max: LIMITS.features, default: 2048, label: 'Width (dim)', meaning: 'the hidden size', unit: 'features' },
    depth: {
      type: 'int',
      min: 1,
      max: LIMITS.depth,
      default: 22,
      label: 'Depth (blocks)',
      meaning: 'number of decoder layers',
      unit: 'blocks',
    },
    heads: {
      type: 'int',
      min: 1,
      max: LIMITS.heads,
      default: 32,
      label: 'Attention heads',
      meaning: 'query heads; head_dim = dim / heads',
      unit: 'heads',
    },
    kv_heads: {
      type: 'int',
      min: 1,
      max: LIMITS.heads,
      default: 32,
      defaultFrom: 'heads',
      label: 'Key/value heads',
      meaning: 'grouped-query attention: heads share k and v in groups of heads / kv_heads (default: heads, no grouping)',
      unit: 'heads',
    },
    ffn: {
      type: 'int',
      min: 1,
      max: LIMITS.features,
      default: 5632,
      label: 'MLP width (ffn)',
      meaning: 'intermediate size of the SwiGLU MLP',
      unit: 'features',
    },
  },
  specDefaults: { batch: 8, loss: 'cross_entropy' },
  losses: ['cross_entropy'],
  blocks: true,
  transformer: true,
  roles: { depth: 'depth', seq: 'seq', widths: ['dim', 'ffn', 'vocab'] },
  loraTargets: [
    { value: 'q', label: 'q (wq)' },
    { value: 'k', label: 'k (wk)' },
    { value: 'v', label: 'v (wv)' },
    { value: 'o', label: 'o (wo)' },
    { value: 'gate', label: 'gate (w1)' },
    { value: 'up', label: 'up (w3)' },
    { value: 'down', label: 'down (w2)' },
  ],
  loraDefaultTargets: ['q', 'v'],
  presets: [
    {
      id: 'tinyllama',
      label: 'TinyLlama-1.1B',
      model: { vocab: 32000, seq: 2048, dim: 2048, depth: 22, heads: 32, kv_heads: 4, ffn: 5632 },
    },
    { id: 'llama3-8b', label: 'Llama-3-8B', model: { vocab: 128256, seq: 8192, dim: 4096, depth: 32, heads: 32, kv_heads: 8, ffn: 14336 } },
  ],
  check: (m) => {
    const issues = headChecks(m.dim, m.heads);
    if (m.heads % m.kv_heads !== 0)
      issues.push({
        path: ['model', 'kv_heads'],
        message: `must divide model.heads (${m.heads}) evenly (grouped-query attention)`,
        input: m.kv_heads,
      });
    return issues;
  },
  name: (m) => `llama ${m.dim}x${m.depth}${m.kv_heads !== m.heads ? ` kv${m.kv_heads}` : ''} seq ${m.seq}`,
  parameters: (m) => {
    const C = m.dim;
    const D = C / m.heads;
    const attn = C * m.heads * D + 2 * C * m.kv_heads * D + m.heads * D * C;
    const block = 2 * C + attn + 3 * C * m.ffn;
    return m.vocab * C + m.depth * block + C + C * m.vocab;
  },
});

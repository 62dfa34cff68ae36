// A completed config's main facts, for the experiment panel and run views: what the file
// says the model is, in the words people use for it.
import { archByModelType, type HfConfig } from './architectures';
import { hfSizes } from './config';
import { hfParameters } from './parameters';

export function hfDetails(c: HfConfig): { key: string; label: string; value: string }[] {
  const arch = archByModelType(c.model_type as string)!;
  const s = hfSizes(c);
  const n = (x: unknown) => (typeof x === 'number' ? x.toLocaleString('en-US') : String(x));
  const rows: { key: string; label: string; value: string }[] = [
    { key: 'architecture', label: 'Architecture', value: `${arch.arch} (${arch.modelType})` },
    { key: 'layers', label: 'Layers', value: n(s.depth) },
    { key: 'hidden', label: 'Hidden size', value: n(s.dim) },
    { key: 'heads', label: 'Heads (query / key-value)', value: `${s.heads} / ${s.kv_heads}` },
  ];
  if (c.head_dim !== undefined) rows.push({ key: 'head_dim', label: 'Head dim', value: n(c.head_dim) });
  rows.push({ key: 'mlp', label: 'MLP width', value: n(c.intermediate_size ?? c.n_inner) });
  const experts = c.num_local_experts ?? c.num_experts;
  if (experts !== undefined)
    rows.push({
      key: 'experts',
      label: 'Experts',
      value: `${experts}, ${c.num_experts_per_tok} per token${c.moe_intermediate_size !== undefined ? `, width ${n(c.moe_intermediate_size)}` : ''}`,
    });
  rows.push(
    { key: 'vocab', label: 'Vocabulary', value: n(s.vocab) },
    { key: 'tied', label: 'Tied embeddings', value: c.tie_word_embeddings ? 'yes' : 'no' },
    { key: 'positions', label: 'Max positions', value: n(s.positions) },
  );
  const window = c.sliding_window;
  if (typeof window === 'number') rows.push({ key: 'window', label: 'Sliding window', value: n(window) });
  rows.push({ key: 'parameters', label: 'Parameters', value: n(hfParameters(c)) });
  return rows;
}

// Parameter counts of a completed config, as sum(p.numel() for p in model.parameters()) gives
// them for the transformers 5.17 modeling code (tied lm_head counted once), and the LoRA
// adapters PEFT adds: r x (in + out) per wrapped module.
import { archByModelType, type HfConfig } from './architectures';

/** Each Linear in one decoder layer: [module name, in, out, count in the layer]. */
type Linear = [name: string, inF: number, outF: number, times: number];

function layerLinears(c: HfConfig, layer: number): Linear[] {
  const t = c.model_type as string;
  if (t === 'gpt2') {
    const E = c.n_embd as number;
    const I = c.n_inner as number;
    return [
      ['c_attn', E, 3 * E, 1],
      ['c_proj', E, E, 1],
      ['c_fc', E, I, 1],
      ['c_proj', I, E, 1],
    ];
  }
  const H = c.hidden_size as number;
  const D = c.head_dim as number;
  const q = (c.num_attention_heads as number) * D;
  const kv = (c.num_key_value_heads as number) * D;
  const I = c.intermediate_size as number;
  const attn: Linear[] =
    t === 'phi3'
      ? [
          ['qkv_proj', H, q + 2 * kv, 1],
          ['o_proj', q, H, 1],
        ]
      : [
          ['q_proj', H, q, 1],
          ['k_proj', H, kv, 1],
          ['v_proj', H, kv, 1],
          ['o_proj', q, H, 1],
        ];
  if (t === 'phi3') return [...attn, ['gate_up_proj', H, 2 * I, 1], ['down_proj', I, H, 1]];
  if (isSparse(c, layer)) return attn; // experts are fused 3-D parameters, counted in layerParams
  return [...attn, ['gate_proj', H, I, 1], ['up_proj', H, I, 1], ['down_proj', I, H, 1]];
}

/** Whether the layer's MLP is a mixture of experts (Qwen3MoeDecoderLayer's rule; Mixtral: always). */
function isSparse(c: HfConfig, layer: number): boolean {
  if (c.model_type === 'mixtral') return true;
  if (c.model_type !== 'qwen3_moe') return false;
  const only = c.mlp_only_layers as number[];
  return !only.includes(layer) && (c.num_experts as number) > 0 && (layer + 1) % (c.decoder_sparse_step as number) === 0;
}

function layerParams(c: HfConfig, layer: number): number {
  const t = c.model_type as string;
  let n = 0;
  for (const [name, i, o] of layerLinears(c, layer)) n += i * o + linearBias(c, name, o);
  if (t === 'gpt2') return n + 4 * (c.n_embd as number); // ln_1, ln_2 weight + bias
  const H = c.hidden_size as number;
  const D = c.head_dim as number;
  n += (t.startsWith('gemma') ? 4 : 2) * H; // RMSNorm weights (Gemma: pre/post attention and feedforward)
  if (t === 'qwen3' || t === 'qwen3_moe' || t === 'gemma3_text') n += 2 * D; // q_norm, k_norm over head_dim
  if (t === 'olmo2') n += ((c.num_attention_heads as number) + (c.num_key_value_heads as number)) * D; // q_norm, k_norm over all heads
  if (isSparse(c, layer)) {
    const E = (c.num_local_experts ?? c.num_experts) as number;
    const I = (t === 'qwen3_moe' ? c.moe_intermediate_size : c.intermediate_size) as number;
    n += E * H + E * 3 * I * H; // router weight, experts' gate_up_proj and down_proj
  }
  return n;
}

function linearBias(c: HfConfig, name: string, out: number): number {
  const t = c.model_type as string;
  if (t === 'gpt2') return out; // Conv1D always has a bias
  if (t === 'qwen2') return name === 'q_proj' || name === 'k_proj' || name === 'v_proj' ? out : 0;
  const attn = ['q_proj', 'k_proj', 'v_proj', 'o_proj'].includes(name);
  if (attn && c.attention_bias === true) return out;
  if (!attn && c.mlp_bias === true) return out;
  return 0;
}

const layersOf = (c: HfConfig): number => (c.model_type === 'gpt2' ? c.n_layer : c.num_hidden_layers) as number;

/** Parameters of the base model (tied lm_head once). */
export function hfParameters(c: HfConfig): number {
  const t = c.model_type as string;
  const V = c.vocab_size as number;
  const H = (t === 'gpt2' ? c.n_embd : c.hidden_size) as number;
  let n = V * H; // token embedding
  if (t === 'gpt2')
    n += (c.n_positions as number) * H + 2 * H; // wpe, ln_f
  else n += H; // final norm
  for (let l = 0; l < layersOf(c); l++) n += layerParams(c, l);
  if (!c.tie_word_embeddings) n += V * H;
  return n;
}

/** Parameters LoRA adds: rank x (in + out) for every wrapped module of every layer. */
export function hfLoraParameters(c: HfConfig, rank: number, targets: readonly string[]): number {
  let n = 0;
  for (let l = 0; l < layersOf(c); l++) for (const [name, i, o] of layerLinears(c, l)) if (targets.includes(name)) n += rank * (i + o);
  return n;
}

/** The LoRA targets a completed config's architecture has. */
export const hfLoraTargets = (c: HfConfig): readonly string[] => archByModelType(c.model_type as string)?.loraTargets ?? [];

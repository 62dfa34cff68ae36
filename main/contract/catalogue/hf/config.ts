// A user's config.json checked and completed at the boundary: the architecture resolved from
// architectures[0] / model_type, every field the modeling code reads filled with transformers
// 5.17's default (architectures.ts), the config classes' __post_init__ rules applied and
// rope_parameters standardized, each value checked against what the engine builds.
// Fields no modeling code reads for memory are kept as given.
import type { Issue } from '../family';
import { LIMITS } from '../limits';
import {
  HF_ARCH_NAMES,
  HF_MODEL_TYPES,
  archByModelType,
  archByName,
  type HfArchitecture,
  type HfConfig,
  type HfValue,
} from './architectures';

export const HF_ACTIVATIONS = ['silu', 'gelu', 'gelu_new', 'gelu_pytorch_tanh'] as const;
export const HF_ROPE_TYPES = ['default', 'linear', 'dynamic', 'yarn', 'longrope', 'llama3'] as const;
const LAYER_TYPES = ['full_attention', 'sliding_attention'];
/** Most keys a config may hold (a config.json has a few dozen). */
const MAX_CONFIG_KEYS = 512;

type Check =
  | { t: 'int'; min: number; max: number; nullable?: boolean }
  | { t: 'num'; min: number; max: number; minEx?: boolean; maxEx?: boolean; nullable?: boolean }
  | { t: 'bool'; must?: boolean }
  | { t: 'enum'; values: readonly string[] }
  | { t: 'layers' }
  | { t: 'ints' };

const size = (max: number, nullable = false): Check => ({ t: 'int', min: 1, max, nullable });
const prob: Check = { t: 'num', min: 0, max: 1, maxEx: true };
const act: Check = { t: 'enum', values: HF_ACTIVATIONS };

/** How each field the architectures read is checked (a field absent here is not range-checked). */
const CHECKS: Record<string, Check> = {
  vocab_size: size(LIMITS.vocab),
  hidden_size: size(LIMITS.features),
  n_embd: size(LIMITS.features),
  intermediate_size: size(LIMITS.features),
  moe_intermediate_size: size(LIMITS.features),
  n_inner: size(LIMITS.features, true),
  num_hidden_layers: size(LIMITS.depth),
  n_layer: size(LIMITS.depth),
  num_attention_heads: size(LIMITS.heads),
  n_head: size(LIMITS.heads),
  num_key_value_heads: size(LIMITS.heads, true),
  head_dim: size(1024, true),
  max_position_embeddings: size(LIMITS.seq),
  original_max_position_embeddings: size(LIMITS.seq),
  n_positions: size(LIMITS.seq),
  sliding_window: size(LIMITS.seq, true),
  max_window_layers: { t: 'int', min: 0, max: LIMITS.depth },
  num_experts: size(LIMITS.heads),
  num_local_experts: size(LIMITS.heads),
  num_experts_per_tok: size(LIMITS.heads),
  decoder_sparse_step: size(LIMITS.depth),
  query_pre_attn_scalar: { t: 'num', min: 0, max: 1e9, minEx: true },
  rms_norm_eps: { t: 'num', min: 0, max: 1, minEx: true, maxEx: true },
  layer_norm_epsilon: { t: 'num', min: 0, max: 1, minEx: true, maxEx: true },
  attention_dropout: prob,
  resid_pdrop: prob,
  embd_pdrop: prob,
  attn_pdrop: prob,
  router_aux_loss_coef: { t: 'num', min: 0, max: 1e9 },
  router_jitter_noise: { t: 'num', min: 0, max: 1 },
  final_logit_softcapping: { t: 'num', min: 0, max: 1e9, minEx: true, nullable: true },
  attn_logit_softcapping: { t: 'num', min: 0, max: 1e9, minEx: true, nullable: true },
  hidden_act: act,
  hidden_activation: act,
  activation_function: act,
  tie_word_embeddings: { t: 'bool' },
  attention_bias: { t: 'bool' },
  mlp_bias: { t: 'bool' },
  use_sliding_window: { t: 'bool' },
  norm_topk_prob: { t: 'bool' },
  output_router_logits: { t: 'bool' },
  scale_attn_weights: { t: 'bool' },
  scale_attn_by_inverse_layer_idx: { t: 'bool' },
  reorder_and_upcast_attn: { t: 'bool' },
  add_cross_attention: { t: 'bool', must: false },
  use_bidirectional_attention: { t: 'bool', must: false },
  layer_types: { t: 'layers' },
  mlp_only_layers: { t: 'ints' },
};

/** Other spellings config.json files use (the config classes' attribute_map). */
const ALIASES: Record<string, Record<string, string>> = {
  gpt2: { hidden_size: 'n_embd', max_position_embeddings: 'n_positions', num_attention_heads: 'n_head', num_hidden_layers: 'n_layer' },
  mixtral: { num_experts: 'num_local_experts' },
  qwen3_moe: { num_local_experts: 'num_experts' },
};

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const quoted = (xs: readonly string[]) => xs.map((x) => `"${x}"`).join(', ');

export type HfConfigResult = { ok: true; config: HfConfig; arch: HfArchitecture } | { ok: false; issues: Issue[] };

/** The architecture a config names, or the issue saying why none. */
export function resolveArchitecture(given: Record<string, unknown>, path: (string | number)[]): HfArchitecture | Issue {
  const archs = given.architectures;
  const type = given.model_type;
  if (type === 'gemma3' && isObject(given.text_config))
    return {
      path: [...path, 'model_type'],
      message: `"gemma3" is the multimodal Gemma 3 (Gemma3ForConditionalGeneration): give its text_config (model_type "gemma3_text", Gemma3ForCausalLM) instead`,
      input: type,
    };
  let byArch: HfArchitecture | undefined;
  if (archs !== undefined) {
    if (!Array.isArray(archs) || archs.length < 1 || typeof archs[0] !== 'string')
      return {
        path: [...path, 'architectures'],
        message: 'must be a list naming the architecture, e.g. ["LlamaForCausalLM"]',
        input: archs,
      };
    byArch = archByName(archs[0]);
    if (!byArch)
      return {
        path: [...path, 'architectures', 0],
        message: `architecture "${archs[0]}" is not supported (supported: ${HF_ARCH_NAMES.join(', ')})`,
        input: archs[0],
      };
  }
  if (type !== undefined) {
    const byType = typeof type === 'string' ? archByModelType(type) : undefined;
    if (!byType)
      return {
        path: [...path, 'model_type'],
        message: `model_type ${JSON.stringify(type)} is not supported (supported: ${quoted(HF_MODEL_TYPES)})`,
        input: type,
      };
    if (byArch && byArch !== byType)
      return {
        path: [...path, 'model_type'],
        message: `model_type "${type}" does not match architectures[0] "${byArch.arch}" (its model_type is "${byArch.modelType}")`,
        input: type,
      };
    return byType;
  }
  if (byArch) return byArch;
  return {
    path,
    message: `must name its architecture: "architectures": [one of ${quoted(HF_ARCH_NAMES)}] or "model_type"`,
  };
}

function checkValue(key: string, c: Check, v: unknown, layers: number): string | null {
  if (v === null && (c.t === 'int' || c.t === 'num') && c.nullable) return null;
  if (v === null && c.t === 'layers') return null;
  switch (c.t) {
    case 'int':
      return typeof v === 'number' && Number.isInteger(v) && v >= c.min && v <= c.max
        ? null
        : `must be an integer from ${c.min} to ${c.max}${c.nullable ? ' or null' : ''}`;
    case 'num': {
      const ok = typeof v === 'number' && Number.isFinite(v) && (c.minEx ? v > c.min : v >= c.min) && (c.maxEx ? v < c.max : v <= c.max);
      return ok
        ? null
        : `must be a number ${c.minEx ? '>' : '>='} ${c.min} and ${c.maxEx ? '<' : '<='} ${c.max}${c.nullable ? ' or null' : ''}`;
    }
    case 'bool':
      if (typeof v !== 'boolean') return 'must be true or false';
      return c.must !== undefined && v !== c.must ? `must be ${c.must} (${key}: ${v} is not supported)` : null;
    case 'enum':
      return typeof v === 'string' && c.values.includes(v) ? null : `must be one of ${quoted(c.values)} (the activations supported)`;
    case 'layers':
      return Array.isArray(v) && v.length === layers && v.every((x) => typeof x === 'string' && LAYER_TYPES.includes(x))
        ? null
        : `must be null or a list of ${layers} entries (one per layer), each ${quoted(LAYER_TYPES)}`;
    case 'ints':
      return Array.isArray(v) &&
        v.length <= LIMITS.depth &&
        v.every((x) => Number.isInteger(x) && (x as number) >= 0 && (x as number) < layers)
        ? null
        : `must be a list of layer indices from 0 to ${layers - 1}`;
  }
}

/** Validates and completes a config.json; `path` is where it sits in the spec (["model", "config"]). */
export function completeHfConfig(given: unknown, path: (string | number)[] = ['model', 'config']): HfConfigResult {
  if (!isObject(given)) return { ok: false, issues: [{ path, message: 'must be a config.json object', input: given }] };
  if (Object.keys(given).length > MAX_CONFIG_KEYS)
    return { ok: false, issues: [{ path, message: `must have at most ${MAX_CONFIG_KEYS} keys` }] };
  const arch = resolveArchitecture(given, path);
  if ('path' in arch) return { ok: false, issues: [arch] };

  const c: HfConfig = { ...(given as HfConfig) };
  for (const [from, to] of Object.entries(ALIASES[arch.modelType] ?? {})) if (c[to] === undefined && c[from] !== undefined) c[to] = c[from];
  c.architectures = [arch.arch];
  c.model_type = arch.modelType;
  for (const [k, v] of Object.entries(arch.defaults)) if (c[k] === undefined) c[k] = structuredClone(v);

  const issues: Issue[] = [];
  const layersRaw = c[arch.names.layers];
  const layers = typeof layersRaw === 'number' && Number.isInteger(layersRaw) && layersRaw >= 1 ? layersRaw : 1;
  for (const k of Object.keys(arch.defaults)) {
    const check = CHECKS[k];
    const why = check && checkValue(k, check, c[k], layers);
    if (why) issues.push({ path: [...path, k], message: why, input: c[k] });
  }
  if (issues.length) return { ok: false, issues };

  applyRules(c, arch);
  const rope = completeRope(c, arch, given, path);
  if ('issues' in rope) return { ok: false, issues: rope.issues };
  issues.push(...crossIssues(c, arch, path));
  return issues.length ? { ok: false, issues } : { ok: true, config: c, arch };
}

function applyRules(c: HfConfig, arch: HfArchitecture): void {
  const n = c[arch.names.layers] as number;
  for (const rule of arch.rules) {
    switch (rule) {
      case 'kv_heads_from_heads':
        if (c.num_key_value_heads === null) c.num_key_value_heads = c.num_attention_heads;
        break;
      case 'head_dim_from_hidden':
        if (c.head_dim === null || c.head_dim === undefined)
          c.head_dim = Math.floor((c.hidden_size as number) / (c.num_attention_heads as number));
        break;
      case 'qwen_sliding_window':
        if (!c.use_sliding_window) c.sliding_window = null;
        if (arch.modelType !== 'qwen3_moe' && c.layer_types === null)
          c.layer_types = Array.from({ length: n }, (_, i) =>
            c.sliding_window !== null && i >= (c.max_window_layers as number) ? 'sliding_attention' : 'full_attention',
          );
        break;
      case 'gemma2_layer_types':
        if (c.layer_types === null)
          c.layer_types = Array.from({ length: n }, (_, i) => ((i + 1) % 2 ? 'sliding_attention' : 'full_attention'));
        break;
      case 'gemma3_layer_types': {
        const pattern = typeof c.sliding_window_pattern === 'number' && c.sliding_window_pattern >= 1 ? c.sliding_window_pattern : 6;
        if (c.layer_types === null)
          c.layer_types = Array.from({ length: n }, (_, i) => ((i + 1) % pattern ? 'sliding_attention' : 'full_attention'));
        break;
      }
      case 'gpt2_inner':
        if (c.n_inner === null) c.n_inner = 4 * (c.n_embd as number);
        break;
    }
  }
}

/** rope_parameters as standardize_rope_params leaves it: rope_type and rope_theta always present. */
function completeRope(
  c: HfConfig,
  arch: HfArchitecture,
  given: Record<string, unknown>,
  path: (string | number)[],
): { issues: Issue[] } | object {
  if (arch.ropeTheta === null) return {};
  const one = (src: unknown, theta: unknown, where: (string | number)[]): HfConfig | Issue => {
    const rp: HfConfig = isObject(src) ? { ...(src as HfConfig) } : {};
    if (rp.rope_type === undefined) rp.rope_type = typeof rp.type === 'string' ? rp.type : 'default';
    if (arch.modelType === 'phi3' && (rp.rope_type === 'su' || rp.rope_type === 'yarn')) rp.rope_type = 'longrope';
    if (rp.rope_theta === undefined) rp.rope_theta = (typeof theta === 'number' ? theta : arch.ropeTheta) as number;
    if (!HF_ROPE_TYPES.includes(rp.rope_type as (typeof HF_ROPE_TYPES)[number]))
      return { path: [...where, 'rope_type'], message: `must be one of ${quoted(HF_ROPE_TYPES)}`, input: rp.rope_type };
    if (!(typeof rp.rope_theta === 'number' && rp.rope_theta > 0))
      return { path: [...where, 'rope_theta'], message: 'must be a number > 0', input: rp.rope_theta };
    const prf = rp.partial_rotary_factor ?? given.partial_rotary_factor ?? (arch.modelType === 'phi3' ? 1.0 : undefined);
    if (prf !== undefined) {
      if (!(typeof prf === 'number' && prf > 0 && prf <= 1))
        return { path: [...where, 'partial_rotary_factor'], message: 'must be a number > 0 and <= 1', input: prf };
      rp.partial_rotary_factor = prf;
    }
    return rp;
  };
  const where = [...path, 'rope_parameters'];
  const src = isObject(given.rope_parameters) ? given.rope_parameters : given.rope_scaling;
  if (arch.modelType === 'gemma3_text') {
    const nested = isObject(src) && (isObject(src.full_attention) || isObject(src.sliding_attention));
    const full = one(nested ? src.full_attention : src, given.rope_theta, [...where, 'full_attention']);
    const slide = one(nested ? src.sliding_attention : undefined, given.rope_local_base_freq ?? 10_000, [...where, 'sliding_attention']);
    if ('path' in full) return { issues: [full as Issue] };
    if ('path' in slide) return { issues: [slide as Issue] };
    c.rope_parameters = { full_attention: full, sliding_attention: slide };
    return {};
  }
  const rp = one(src, given.rope_theta, where);
  if ('path' in rp) return { issues: [rp as Issue] };
  c.rope_parameters = rp;
  return {};
}

function crossIssues(c: HfConfig, arch: HfArchitecture, path: (string | number)[]): Issue[] {
  const n = arch.names;
  const hidden = c[n.hidden] as number;
  const heads = c[n.heads] as number;
  const out: Issue[] = [];
  // The config classes' validate_architecture (and GPT-2's split_heads) need whole heads.
  if (hidden % heads !== 0 && (arch.modelType === 'gpt2' || arch.modelType === 'llama' || arch.modelType.startsWith('gemma')))
    out.push({ path: [...path, n.heads], message: `must divide ${n.hidden} (${hidden}) evenly`, input: heads });
  if (arch.modelType !== 'gpt2') {
    const kv = c.num_key_value_heads as number;
    if (heads % kv !== 0)
      out.push({
        path: [...path, 'num_key_value_heads'],
        message: `must divide num_attention_heads (${heads}) evenly (grouped-query attention)`,
        input: kv,
      });
    const hd = c.head_dim as number;
    if (hd % 2 !== 0) out.push({ path: [...path, 'head_dim'], message: 'must be even (rotary embeddings rotate pairs)', input: hd });
  }
  const experts = (c.num_local_experts ?? c.num_experts) as number | undefined;
  if (experts !== undefined && (c.num_experts_per_tok as number) > experts)
    out.push({
      path: [...path, 'num_experts_per_tok'],
      message: `must be at most the number of experts (${experts})`,
      input: c.num_experts_per_tok,
    });
  return out;
}

/** The generic sizes of a completed config, spelled the way every family's fields are. */
export function hfSizes(c: HfConfig) {
  const arch = archByModelType(c.model_type as string)!;
  const n = arch.names;
  const hidden = c[n.hidden] as number;
  const experts = ((c.num_local_experts ?? c.num_experts) as number | undefined) ?? 0;
  const expertWidth = ((c.moe_intermediate_size ?? c.intermediate_size) as number | undefined) ?? 0;
  const ffn = Math.max((c.intermediate_size ?? c.n_inner ?? 4 * hidden) as number, 2 * experts * expertWidth);
  return {
    depth: c[n.layers] as number,
    dim: hidden,
    heads: c[n.heads] as number,
    kv_heads: (c.num_key_value_heads ?? c[n.heads]) as number,
    ffn,
    vocab: c.vocab_size as number,
    positions: c[n.positions] as number,
  };
}

export type { HfConfig, HfValue };

// hf: a Hugging Face decoder built from its config.json (transformers 5.17 modeling code,
// random init, no weights), trained the way HF's Trainer steps it, fine-tuned with PEFT LoRA,
// generating with the dynamic cache. The config is checked and completed by hf/config.ts;
// the architectures and their defaults are in hf/architectures.ts, the presets in hf/presets.ts.
import { defineFamily, type Issue } from '../family';
import { LIMITS } from '../limits';
import { HF_LORA_TARGETS, archByModelType, type HfConfig } from '../hf/architectures';
import { completeHfConfig, hfSizes } from '../hf/config';
import { hfParameters, hfLoraTargets } from '../hf/parameters';
import { hfDetails } from '../hf/details';
import { HF_DEFAULT_PRESET, HF_PRESETS, hfPreset } from '../hf/presets';
import { presetOfConfig } from '../hf/preset_match';

const configOf = (m: unknown): HfConfig => (m as { config: HfConfig }).config;

export const hf = defineFamily({
  kind: 'hf',
  label: 'Hugging Face model (config.json)',
  summary: 'A transformers decoder from its config.json: Llama, Mistral, Qwen2/3, Gemma 2/3, Phi-3, Mixtral, OLMo 2, GPT-2.',
  fields: {
    seq: {
      type: 'int',
      min: 1,
      max: LIMITS.seq,
      default: 1024,
      label: 'Sequence length',
      meaning: 'training tokens per sample (input_ids of shape batch x seq)',
      unit: 'tokens',
    },
    attn_implementation: {
      type: 'enum',
      default: 'sdpa',
      label: 'Attention',
      meaning: "config._attn_implementation: PyTorch's scaled_dot_product_attention or the eager matmul-softmax-matmul",
      options: [
        { value: 'sdpa', label: 'sdpa' },
        { value: 'eager', label: 'eager' },
      ],
    },
  },
  specDefaults: { batch: 8, loss: 'cross_entropy' },
  // The model computes its own loss (ForCausalLMLoss on the shifted labels): fixed, not chosen.
  losses: ['cross_entropy'],
  ownLoss: "the model's own: ForCausalLMLoss, cross-entropy on the labels shifted by one (labels = input_ids)",
  blocks: true,
  transformer: true,
  loraTargets: HF_LORA_TARGETS.map((t) => ({ value: t, label: t })),
  loraDefaultTargets: ['q_proj', 'v_proj'],
  presets: HF_PRESETS.map((p) => ({
    id: p.id,
    label: p.label,
    model: { seq: p.seq, attn_implementation: 'sdpa' as const },
    nested: { preset: p.id },
  })),
  nested: {
    keys: ['config', 'preset'],
    help: "config: the model's config.json (architectures / model_type, fields as the file spells them), or preset: a preset id",
    complete: (given) => {
      if (given.config !== undefined && given.preset !== undefined)
        return {
          ok: false,
          issues: [{ path: ['model', 'preset'], message: 'give either model.config or model.preset, not both', input: given.preset }],
        };
      let raw = given.config;
      let seq: number | undefined;
      if (raw === undefined) {
        const id = given.preset ?? HF_DEFAULT_PRESET;
        const p = typeof id === 'string' ? hfPreset(id) : undefined;
        if (!p)
          return {
            ok: false,
            issues: [
              {
                path: ['model', 'preset'],
                message: `unknown preset (presets: ${HF_PRESETS.map((x) => `"${x.id}"`).join(', ')})`,
                input: id,
              },
            ],
          };
        raw = p.config;
        seq = p.seq;
      }
      const res = completeHfConfig(raw);
      // A preset's training length is its seq default (model.seq, when given, wins).
      return res.ok ? { ok: true, nested: { config: res.config, ...(seq !== undefined ? { seq } : {}) } } : res;
    },
  },
  // The sizes live in the config: depth and widths are read from it (the limits apply as to any family).
  roles: {
    depth: (m) => hfSizes(configOf(m)).depth,
    seq: 'seq',
    widths: [],
    derivedWidths: (m) => {
      const s = hfSizes(configOf(m));
      return [s.dim, s.ffn, s.vocab].filter((n): n is number => typeof n === 'number');
    },
  },
  sizes: (m) => {
    const s = hfSizes(configOf(m));
    return { depth: s.depth, dim: s.dim, ffn: s.ffn, vocab: s.vocab, heads: s.heads, seq: m.seq };
  },
  loraTargetsOf: (m) => hfLoraTargets(configOf(m)),
  loraDefaultTargetsOf: (m) => archByModelType(configOf(m).model_type as string)?.loraDefaultTargets ?? ['q_proj', 'v_proj'],
  loraDropout: true,
  // PEFT's PeftModel.generate runs the base with its adapters unmerged.
  loraServing: true,
  modes: ['train', 'generate'],
  checkpointModes: ['none', 'block'],
  caches: ['dynamic'],
  details: (m) => hfDetails(configOf(m)),
  checkSpec: (spec) => {
    const issues: Issue[] = [];
    const c = configOf(spec.model);
    if (typeof spec.checkpoint !== 'string' || !['none', 'block'].includes(spec.checkpoint))
      issues.push({
        path: ['checkpoint'],
        message:
          'must be "none" or "block" for hf models ("block": gradient_checkpointing_enable on every decoder layer, use_reentrant False)',
        input: spec.checkpoint,
      });
    if (!['train', 'generate'].includes(spec.mode))
      issues.push({ path: ['mode'], message: 'must be "train" or "generate" for hf models', input: spec.mode });
    if (spec.mode === 'generate' && spec.cache !== 'dynamic')
      issues.push({
        path: ['cache'],
        message: 'the static cache is not supported for HF models yet: use "dynamic" (DynamicCache)',
        input: spec.cache,
      });
    // GPT-2's learned positions have n_positions rows: no token may sit beyond them.
    if (c.model_type === 'gpt2') {
      const rows = c.n_positions as number;
      const seq = spec.model.seq as number;
      if (seq > rows) issues.push({ path: ['model', 'seq'], message: `must be at most config.n_positions (${rows})`, input: seq });
      else if (spec.mode === 'generate' && spec.prompt + spec.new_tokens > rows)
        issues.push({
          path: ['new_tokens'],
          message: `prompt + new_tokens must be at most config.n_positions (${rows})`,
          input: spec.new_tokens,
        });
    }
    return issues;
  },
  check: () => [],
  name: (m) => {
    const c = configOf(m);
    const preset = presetOfConfig(c);
    if (preset) return `${preset.label} seq ${m.seq}`;
    const s = hfSizes(c);
    return `${archByModelType(c.model_type as string)?.label ?? c.model_type} ${s.dim}x${s.depth} seq ${m.seq}`;
  },
  parameters: (m) => hfParameters(configOf(m)),
});

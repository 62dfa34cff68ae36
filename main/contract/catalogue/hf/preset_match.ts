// Which preset a completed config is (for run names): the preset whose completed config has
// the same values in every field the modeling code reads (token ids, dtypes and such aside).
import { archByModelType, type HfConfig, type HfValue } from './architectures';
import { completeHfConfig } from './config';
import { HF_PRESETS, type HfPreset } from './presets';

const canonical = (v: HfValue): string => {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v && typeof v === 'object')
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical(v[k])}`)
      .join(',')}}`;
  return JSON.stringify(v);
};

/** The fields the architecture reads, plus the ones completion derives (token ids aside: generate()
 *  reads only whether bos_token_id is set, and presets do not spell their tokenizer's ids). */
function readFields(c: HfConfig): HfConfig {
  const arch = archByModelType(c.model_type as string);
  const keys = [...Object.keys(arch?.defaults ?? {}).filter((k) => k !== 'bos_token_id'), 'architectures', 'model_type', 'rope_parameters'];
  return Object.fromEntries(keys.filter((k) => c[k] !== undefined).map((k) => [k, c[k]]));
}

let completed: { preset: HfPreset; key: string }[] | null = null;

export function presetOfConfig(c: HfConfig): HfPreset | undefined {
  completed ??= HF_PRESETS.flatMap((preset) => {
    const r = completeHfConfig(preset.config);
    return r.ok ? [{ preset, key: canonical(readFields(r.config)) }] : [];
  });
  const key = canonical(readFields(c));
  return completed.find((x) => x.key === key)?.preset;
}

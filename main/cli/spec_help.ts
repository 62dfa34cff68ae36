// The spec's keys for `vramlab run --help`, read off the catalogue: every family's and
// optimizer's fields with their defaults and ranges, the spec's own fields, the presets.
import {
  SPEC_FIELDS,
  SHAPE_DRAW_FIELDS,
  PARALLEL_FIELDS,
  PARALLEL_KIND_FIELDS,
  FINETUNE_FIELDS,
  MODE_DEFAULTS,
  families,
  optimizers,
  type Field,
  type Fields,
} from '../contract/catalogue';
import { MAX_ITERATIONS, MAX_LAYER_STEPS, MAX_SWEEP_LAYER_STEPS } from '../contract/limits';

function range(f: Field): string {
  if (f.type === 'enum') return f.options.map((o) => o.value).join(' | ');
  if (f.type === 'bool') return 'true | false';
  if (f.type === 'int') return `${f.min}..${f.max}`;
  return `${f.minExclusive ? '>' : ''}${f.min}..${f.maxExclusive ? '<' : ''}${f.max}`;
}
const dflt = (f: Field) => (f.type === 'int' && f.defaultFrom ? `= ${f.defaultFrom}` : JSON.stringify(f.default));
const fieldLines = (fields: Fields, indent: string) =>
  Object.entries(fields).map(([k, f]) => `${indent}${k.padEnd(16)} ${dflt(f).padEnd(10)} ${range(f).padEnd(24)} ${f.meaning}`);

export function specHelp(): string {
  const lines: string[] = ["Spec keys (all optional; defaults are the parity protocol's):", ''];
  lines.push('  model {"kind": ..., fields}: default {"kind": "mlp"}');
  for (const fam of families()) {
    const extra = Object.entries(fam.specDefaults).map(([k, v]) => `${k} ${JSON.stringify(v)}`);
    lines.push(`    ${fam.kind}: ${fam.summary}${extra.length ? ` (defaults: ${extra.join(', ')})` : ''}`);
    lines.push(...fieldLines(fam.fields, '      '));
    if (fam.nested) lines.push(`      ${fam.nested.help}`);
    // A family whose spec names presets (hf) lists their ids.
    if (fam.presets.length)
      lines.push(`      presets: ${fam.presets.map((p) => (fam.nested ? `${p.id} (${p.label})` : p.label)).join('; ')}`);
  }
  lines.push('', '  optimizer "kind" or {"kind": ..., fields}: default "adam"');
  for (const o of optimizers()) {
    lines.push(`    ${o.kind}: ${o.summary}`);
    lines.push(...fieldLines(o.fields, '      '));
  }
  lines.push(
    '',
    '  checkpoint       "none"     none | block | sqrt | {"every": k}   models with blocks: ' +
      families()
        .filter((f) => f.blocks)
        .map((f) => f.kind)
        .join(', '),
  );
  lines.push(...fieldLines(SPEC_FIELDS, '  '));
  lines.push(
    '  finetune         {"method":"full"} | {"method":"freeze","blocks":k} | {"method":"lora","rank":r,"alpha":a,"targets":[...],"dropout":p (hf)}   transformers only',
  );
  lines.push(...fieldLines(FINETUNE_FIELDS, '    '));
  for (const fam of families())
    if (fam.loraTargets.length)
      lines.push(
        `    ${fam.kind} LoRA targets: ${fam.loraTargets.map((t) => t.value).join(', ')} (default ${fam.loraDefaultTargets.join(', ')}${
          fam.loraTargetsOf ? "; each architecture's own modules, PEFT's default for it" : ''
        })`,
      );
  lines.push('  shapes           null       [{"batch": b, "seq": t}, ...]   one training iteration per entry (transformers)');
  lines.push(
    '                              or a draw: {"seq": {"min": a, "max": b} | {"histogram": [[length, weight], ...]}, "batch", "steps", "seed",',
  );
  lines.push('                              "pad_to", "order": "drawn" | "longest_first"}   lengths drawn per step from the seed');
  lines.push(...fieldLines(SHAPE_DRAW_FIELDS, '    '));
  lines.push('  parallel         null       {"kind": "fsdp2" | "ddp", "world": n, ...}   data parallel, batch per rank');
  lines.push(...fieldLines(PARALLEL_FIELDS, '    '));
  for (const [kind, fields] of Object.entries(PARALLEL_KIND_FIELDS)) {
    lines.push(`    ${kind}:`);
    lines.push(...fieldLines(fields, '      '));
  }
  lines.push('      fsdp2 param_dtype, reduce_dtype: null | "bf16" | "fp16" | "fp32" (MixedPrecisionPolicy)');
  lines.push(
    `  mode defaults:   ${Object.entries(MODE_DEFAULTS)
      .map(([m, d]) => `${m}: ${JSON.stringify(d)}`)
      .join('; ')}`,
  );
  lines.push('  alloc_conf       ""         PYTORCH_CUDA_ALLOC_CONF syntax');
  lines.push('  device           "sim:h100-80gb" | "sim:custom:24GiB" | "sim:custom:1TiB@h100-80gb" | "cuda:0" (\'vramlab devices\')');
  lines.push('  capacity         null       a size like "20GiB" or bytes');
  lines.push(
    '',
    `  work limits:     iterations <= ${MAX_ITERATIONS}; iterations x accum x model.depth <= ${MAX_LAYER_STEPS}`,
    `                   (generate: new_tokens x model.depth); no tensor over 1 PiB; a sweep's runs <= ${MAX_SWEEP_LAYER_STEPS} layer passes in all`,
  );
  return lines.join('\n') + '\n';
}

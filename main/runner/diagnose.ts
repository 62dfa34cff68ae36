// Turns an OOM into advice: which category held the memory, how much the cache held
// without using it, and which settings of this spec would help.
import { CATEGORIES, type Category, type OomReport } from '../contract/runs';
import type { Spec } from '../contract/spec';
import type { NativeOom } from '../addon/types';
import { formatBytes } from '../contract/units';
import { familyOf, optimizerOf, optimizers, type OptimizerDescription } from '../contract/catalogue';
import { parseAllocConf } from '../contract/alloc_conf';

/** Categories that are activations of one kind or another (what batch, checkpointing and autocast shrink). */
const ACTIVATIONS: readonly Category[] = ['activations', 'temporaries', 'attention', 'mlp', 'norms', 'logits'];

export function diagnoseOom(oom: NativeOom, spec: Spec): OomReport {
  const by = Object.fromEntries(CATEGORIES.map((c, i) => [c, oom.by[i] ?? 0])) as Record<Category, number>;
  let dominant: Category = 'activations';
  for (const c of CATEGORIES) if (by[c] > by[dominant]) dominant = c;
  const allocated = oom.allocated;
  const reservedUnallocated = Math.max(0, oom.reserved - oom.allocated);
  return {
    message: oom.message,
    requested: oom.requested,
    phase: oom.phase,
    iteration: oom.iteration,
    module: oom.module,
    allocated,
    reserved: oom.reserved,
    reserved_unallocated: reservedUnallocated,
    capacity: oom.capacity,
    by_category: by,
    dominant: { category: dominant, bytes: by[dominant], share: allocated > 0 ? by[dominant] / allocated : 0 },
    suggestions: suggest(spec, oom, by, dominant, reservedUnallocated),
  };
}

/** An optimizer of the catalogue that keeps fewer state buffers per parameter (at its defaults)
 *  than the spec's, as advice; null when the spec's keeps none or no other keeps fewer. */
function lighterOptimizer(o: Spec['optimizer']): string | null {
  const own = optimizerOf(o.kind);
  if (!own) return null;
  const buffers = own.stateBuffers(o as never);
  const defaults = (d: OptimizerDescription) => Object.fromEntries(Object.entries(d.fields).map(([k, f]) => [k, f.default]));
  const better = optimizers()
    .filter((d) => d.kind !== 'none' && d.kind !== o.kind)
    .map((d) => ({ d, n: d.stateBuffers(defaults(d) as never) }))
    .filter((x) => x.n < buffers)
    .sort((a, b) => a.n - b.n)[0];
  if (!better) return null;
  return `optimizer "${better.d.kind}": ${own.label} keeps ${buffers * 4} bytes of state per parameter, ${better.d.label} ${better.n * 4}`;
}

function suggest(spec: Spec, oom: NativeOom, by: Record<Category, number>, dominant: Category, unallocated: number): string[] {
  const out: string[] = [];
  const conf = parseAllocConf(spec.alloc_conf);
  // Fragmentation: the cache holds enough, just not in one piece.
  if (unallocated >= oom.requested || unallocated > 0.1 * oom.capacity) {
    if (!conf.expandableSegments)
      out.push(`alloc_conf "expandable_segments:True": ${formatBytes(unallocated)} is reserved but unallocated (fragmentation)`);
    if (conf.maxSplitSize === null) out.push('alloc_conf "max_split_size_mb:128": stop large cached blocks from being split');
  }
  if (spec.mode === 'loss_accumulation' && spec.keep_loss_graph)
    out.push("keep_loss_graph: false: accumulate loss.item(), not the loss tensor, so each iteration's graph is freed");
  const family = familyOf(spec.model.kind);
  if (ACTIVATIONS.includes(dominant) && spec.mode !== 'generate') {
    if (family?.blocks && spec.checkpoint === 'none')
      out.push('checkpoint: "block" (or "sqrt"): keep only block inputs and recompute during backward');
    if (dominant === 'logits')
      out.push(
        'the logits (batch x seq x vocab) and their fp32 gradient dominate: a smaller batch or sequence, or a loss computed in chunks',
      );
    if (spec.precision === 'fp32' || spec.precision === 'tf32') out.push('precision: "bf16": autocast halves most activations');
    if (spec.batch > 1) {
      out.push(`a smaller batch ('vramlab fit' finds the largest that fits)`);
      if (spec.accum === 1)
        out.push(`accum: 2 with batch ${Math.max(1, Math.floor(spec.batch / 2))}: same effective batch, half the activations`);
    }
  }
  if (oom.phase === 'optimizer_step' && spec.optimizer.kind !== 'none' && spec.optimizer.foreach)
    out.push('optimizer foreach: false: the foreach step allocates temporaries for all parameters at once');
  if (dominant === 'optimizer_state') {
    const lighter = lighterOptimizer(spec.optimizer);
    if (lighter) out.push(lighter);
  }
  if (dominant === 'gradients' && !spec.set_to_none) out.push('set_to_none: true: zero_grad frees gradients instead of zeroing them');
  if (dominant === 'parameters')
    out.push(
      family?.transformer && spec.weights === 'fp32'
        ? 'weights: "bf16": the parameters alone fill the device'
        : 'a smaller model (depth, hidden or dim): the parameters alone fill the device',
    );
  if ((dominant === 'optimizer_state' || dominant === 'gradients') && family?.transformer && spec.finetune.method === 'full')
    out.push('finetune: {"method": "lora"} or {"method": "freeze"}: frozen parameters get no gradients and no optimizer state');
  if (dominant === 'kv_cache')
    out.push('a shorter generation (new_tokens) or a smaller batch; grouped-query attention (kv_heads < heads) shrinks the cache');
  if (spec.capacity !== null) out.push(`capacity: the spec limits the device to ${formatBytes(spec.capacity)}; raise or remove it`);
  if (out.length === 0 && by.activations > 0) out.push('a smaller batch');
  return out;
}

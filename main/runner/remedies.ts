// What would make a job fit, checked: each candidate change is a valid spec (the one
// validation, contract/spec.ts) run through the simulator on the spec's card; only those
// that complete are offered, cheapest first. After an OOM the requirement comes from the
// same spec run on an unbounded device (what the job needs on the card, and the shortfall).
import type { NativeAddon, NativeOutcome, NativeRunHandle } from '../addon/types';
import { checkSpec, type Spec, type SpecInput } from '../contract/spec';
import { familyOf } from '../contract/catalogue';
import { makeVerdict, REMEDY_COSTS, type Remedy, type RemediesResult, type RemedyCost, type Verdict } from '../contract/verdict';
import { formatBytes } from '../contract/units';
import { cardMemory } from './card_memory';
import { simDevice } from './predict_device';
import { simulate, simulateUnbounded } from './simulate';
import { rankVerdicts } from './rank_verdicts';

export interface Requirement {
  verdict: Verdict;
  /** The unbounded run (for an OOM) or the run itself: parameters, modelled time. */
  outcome: NativeOutcome;
}

/** The verdict for a spec whose run ended as `outcome` on its card: a completed run is its own
 *  answer; an OOM is run again on an unbounded device for what it needs. Null when the
 *  unbounded run fails too (an engine error) or the outcome is neither done nor OOM. */
export async function requirementOf(
  native: NativeAddon,
  spec: Spec,
  outcome: NativeOutcome,
  signal?: AbortSignal,
  running?: Set<NativeRunHandle>,
): Promise<Requirement | null> {
  // A data-parallel rank holds NCCL's buffers beside the context (the engine leaves the
  // allocator the rest); an OOM outcome does not report them, the unbounded run does.
  const card = (o: NativeOutcome) => ({ ...cardMemory(native, spec.device), nccl: o.nccl ?? 0 });
  if (outcome.status === 'done') return { verdict: makeVerdict(true, outcome.peak_reserved, card(outcome), spec.capacity), outcome };
  if (outcome.status !== 'oom') return null;
  const unbounded = await simulateUnbounded(native, spec, signal, running);
  if (unbounded.status !== 'done') return null;
  return { verdict: makeVerdict(false, unbounded.peak_reserved, card(unbounded), spec.capacity), outcome: unbounded };
}

interface Candidate {
  id: string;
  label: string;
  cost: RemedyCost;
  cost_note: string;
  same_training: boolean;
  input: SpecInput;
}

/** "a:1,b:2" with key set to value (replacing the key where it was given). */
function withSetting(conf: string, key: string, value: string): string {
  const kept = conf
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s && !s.startsWith(`${key}:`));
  return [...kept, `${key}:${value}`].join(',');
}

/** Every change worth simulating for this spec (not yet validated). */
function candidates(spec: Spec): Candidate[] {
  const out: Candidate[] = [];
  const s = spec as unknown as SpecInput;
  const add = (c: Omit<Candidate, 'input'>, change: Partial<SpecInput>) => out.push({ ...c, input: { ...s, ...change } as SpecInput });
  const free = { cost: 'free' as const, same_training: true };
  if (!/expandable_segments:True/.test(spec.alloc_conf))
    add(
      { ...free, id: 'expandable_segments', label: 'alloc_conf: "expandable_segments:True"', cost_note: 'an allocator setting' },
      { alloc_conf: withSetting(spec.alloc_conf, 'expandable_segments', 'True') },
    );
  if (!/max_split_size_mb/.test(spec.alloc_conf))
    add(
      { ...free, id: 'max_split_size_mb', label: 'alloc_conf: "max_split_size_mb:128"', cost_note: 'an allocator setting' },
      { alloc_conf: withSetting(spec.alloc_conf, 'max_split_size_mb', '128') },
    );
  if (spec.capacity !== null)
    add(
      { ...free, id: 'no_capacity', label: 'capacity: none (remove the cap)', cost_note: 'the spec limits the device itself' },
      { capacity: null },
    );
  if (spec.mode === 'loss_accumulation' && spec.keep_loss_graph)
    add(
      { ...free, id: 'loss_item', label: 'keep_loss_graph: false (total += loss.item())', cost_note: "frees each iteration's graph" },
      { keep_loss_graph: false },
    );
  if (!spec.set_to_none && spec.mode !== 'inference' && spec.mode !== 'generate')
    add({ ...free, id: 'set_to_none', label: 'set_to_none: true', cost_note: 'frees gradients between steps' }, { set_to_none: true });
  if (spec.optimizer.kind !== 'none' && spec.optimizer.foreach)
    add(
      {
        id: 'no_foreach',
        label: 'optimizer foreach: false',
        cost: 'compute',
        same_training: true,
        cost_note: 'a slower, per-parameter step',
      },
      { optimizer: { ...spec.optimizer, foreach: false } as SpecInput['optimizer'] },
    );
  const family = familyOf(spec.model.kind);
  const trains = spec.mode === 'train' || spec.mode === 'loss_accumulation';
  if (trains && family?.blocks && spec.checkpoint === 'none')
    for (const mode of ['block', 'sqrt'] as const)
      add(
        {
          id: `checkpoint_${mode}`,
          label: `checkpoint: "${mode}"`,
          cost: 'compute',
          same_training: true,
          cost_note: 'recomputes the forward in backward',
        },
        { checkpoint: mode },
      );
  if (spec.mode === 'train' && spec.batch > 1)
    // The same effective batch in smaller micro-batches; each divisor of the batch, largest first.
    for (let b = Math.floor(spec.batch / 2); b >= 1; b--)
      if (spec.batch % b === 0)
        add(
          {
            id: `accum_${b}`,
            label: `batch: ${b}, accum: ${spec.accum * (spec.batch / b)} (same effective batch ${spec.batch * spec.accum})`,
            cost: 'compute',
            same_training: true,
            cost_note: 'smaller, more numerous steps',
          },
          { batch: b, accum: spec.accum * (spec.batch / b) },
        );
  if (spec.precision === 'fp32' || spec.precision === 'tf32')
    add(
      {
        id: 'autocast_bf16',
        label: 'precision: "bf16" (autocast)',
        cost: 'quality',
        same_training: false,
        cost_note: 'bf16 activations: mixed-precision numerics',
      },
      { precision: 'bf16' },
    );
  if (spec.weights === 'fp32' && family?.transformer)
    add(
      {
        id: 'weights_bf16',
        label: 'weights: "bf16"',
        cost: 'quality',
        same_training: false,
        cost_note: 'bf16 parameters and optimizer state: lower precision updates',
      },
      { weights: 'bf16' },
    );
  if (family?.transformer && spec.finetune.method === 'full' && spec.mode !== 'inference' && spec.mode !== 'generate')
    add(
      {
        id: 'lora',
        label: 'finetune: {"method": "lora"} instead of full fine-tuning',
        cost: 'quality',
        same_training: false,
        cost_note: 'trains adapters only: a different model',
      },
      { finetune: { method: 'lora' } },
    );
  return out;
}

export interface RemedyOptions {
  signal?: AbortSignal;
  running?: Set<NativeRunHandle>;
}

/** Simulates every candidate and keeps those that fit, cheapest first (cost, then modelled time). */
export async function checkRemedies(native: NativeAddon, spec: Spec, opts: RemedyOptions = {}): Promise<RemediesResult> {
  const run = (s: Spec, device: string) => simulate(native, s, device, opts.signal, opts.running);
  const card = cardMemory(native, spec.device);
  const device = simDevice(native, spec.device);
  const own = await run(spec, device);
  const need = await requirementOf(native, spec, own, opts.signal, opts.running);
  if (!need) throw new Error(`the spec itself does not run: ${own.error ?? own.status}`);
  const baseTime = need.outcome.sim_time_ms;
  const remedies: Remedy[] = [];
  const rejected: RemediesResult['rejected'] = [];
  let accumFound = false;
  for (const c of candidates(spec)) {
    // Only the largest micro-batch that fits: smaller ones cost more steps for nothing.
    if (c.id.startsWith('accum_') && accumFound) continue;
    const checked = checkSpec(c.input);
    if (!checked.ok) continue;
    const o = await run(checked.spec, device);
    if (o.status !== 'done') {
      rejected.push({ id: c.id, label: c.label, status: o.status, reserved: o.oom?.reserved ?? o.peak_reserved });
      continue;
    }
    if (c.id.startsWith('accum_')) accumFound = true;
    // Step time is compared on one device (the unbounded one, where the spec itself completes):
    // the card's own time model would time the changed spec against a run that stopped early.
    const timed = await simulateUnbounded(native, checked.spec, opts.signal, opts.running);
    remedies.push(remedy(c, checked.spec, o, card, timed.status === 'done' ? timed.sim_time_ms : null, baseTime));
  }
  if (!need.verdict.fits) remedies.push(...(await moreGpus(native, spec, device, opts)));
  const larger = await largerCard(native, spec, card.total, need.verdict.on_card, opts);
  if (larger) remedies.push(larger);
  const rank = (r: Remedy) => REMEDY_COSTS.indexOf(r.cost);
  remedies.sort((a, b) => rank(a) - rank(b) || (a.time_ratio ?? 1) - (b.time_ratio ?? 1));
  return { verdict: need.verdict, parameters: need.outcome.num_parameters, remedies, rejected };
}

function remedy(
  c: Candidate,
  spec: Spec,
  o: NativeOutcome,
  card: { total: number; context: number },
  time: number | null,
  baseTime: number | null,
): Remedy {
  const ratio = time !== null && baseTime ? time / baseTime : null;
  return {
    id: c.id,
    label: c.label,
    cost: c.cost,
    cost_note: c.cost_note,
    same_training: c.same_training,
    time_ratio: ratio,
    spec: spec as unknown as SpecInput,
    peak_reserved: o.peak_reserved,
    verdict: makeVerdict(true, o.peak_reserved, { ...card, nccl: o.nccl ?? 0 }, spec.capacity),
  };
}

/** Worlds tried for a job that does not fit one GPU (fit over world searches the same). */
const WORLDS = [2, 4, 8] as const;

/**
 * More GPUs of this card: the smallest world at which every rank fits, for FSDP2 (shards the
 * parameters, gradients and optimizer state) and for DDP (replicates them: only a smaller
 * per-rank batch helps). The global batch stays the spec's where the world divides it
 * (per-rank batch = batch / world); FSDP2 otherwise keeps the per-rank batch (a larger
 * global batch: not the same training). Each is the changed spec run on the card, per rank:
 * the highest rank's peak, with NCCL's buffers beside the context.
 */
async function moreGpus(native: NativeAddon, spec: Spec, device: string, opts: RemedyOptions): Promise<Remedy[]> {
  if (spec.parallel || spec.mode !== 'train') return [];
  const card = cardMemory(native, spec.device);
  const out: Remedy[] = [];
  for (const kind of ['fsdp2', 'ddp'] as const)
    for (const world of WORLDS) {
      const even = spec.batch % world === 0;
      if (kind === 'ddp' && !even) continue;
      const batch = even ? spec.batch / world : spec.batch;
      const checked = checkSpec({ ...(spec as unknown as SpecInput), parallel: { kind, world }, batch, history: false });
      if (!checked.ok) break; // this kind does not take this spec (family, weights, fine-tuning)
      const o = await simulate(native, checked.spec, device, opts.signal, opts.running);
      if (o.status !== 'done') continue;
      const withNccl = { ...card, nccl: o.nccl ?? 0 };
      const own = makeVerdict(true, o.peak_reserved, withNccl, checked.spec.capacity);
      const peak = Math.max(o.peak_reserved, ...rankVerdicts(o, true, own, withNccl, checked.spec.capacity).map((v) => v.peak_reserved));
      const verdict = makeVerdict(true, peak, withNccl, checked.spec.capacity);
      if (verdict.margin < 0) continue;
      const nccl = `NCCL's ${formatBytes(o.nccl ?? 0)} per rank counted on each card`;
      out.push({
        id: `${kind}_${world}`,
        label:
          kind === 'fsdp2'
            ? `shard over ${world} GPUs with FSDP2 (per-rank batch ${batch})`
            : `${world} GPUs with DDP at per-rank batch ${batch}`,
        cost: 'hardware',
        cost_note: `${world} GPUs of this card, the highest rank's peak; ${nccl}${even ? '' : `; global batch ${batch * world}`}`,
        same_training: even,
        time_ratio: null,
        spec: checked.spec as unknown as SpecInput,
        peak_reserved: peak,
        verdict,
      });
      break;
    }
  return out;
}

/** The smallest simulated preset larger than this card on which the spec completes (tried in
 *  order of size, from the first whose total covers what the job needs). */
async function largerCard(native: NativeAddon, spec: Spec, total: number, needs: number, opts: RemedyOptions): Promise<Remedy | null> {
  // A job that needs no more than this card (the spec's cap, or fragmentation, stopped it) needs no other card.
  if (needs <= total) return null;
  const presets = native
    .listDevices()
    .filter((d) => d.kind === 'sim' && d.total > total && d.total >= needs)
    .sort((a, b) => a.total - b.total);
  for (const d of presets) {
    const checked = checkSpec({ ...(spec as unknown as SpecInput), device: d.id, capacity: null });
    if (!checked.ok) continue;
    const o = await simulate(native, checked.spec, d.id, opts.signal, opts.running);
    if (o.status !== 'done') continue;
    return {
      id: 'larger_card',
      label: `a larger card: ${d.name.replace(/ \(simulated\)$/, '')} (${d.id})`,
      cost: 'hardware',
      cost_note: `${formatBytes(d.total)} instead of ${formatBytes(total)}`,
      same_training: true,
      time_ratio: null,
      spec: checked.spec as unknown as SpecInput,
      peak_reserved: o.peak_reserved,
      verdict: makeVerdict(true, o.peak_reserved, { total: d.total, context: d.context, nccl: o.nccl ?? 0 }, null),
    };
  }
  return null;
}

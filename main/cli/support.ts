// Shared by the run, sweep and fit commands: reading a spec file, opening the store and
// a manager, the progress line on stderr, and the human-readable result.
import { readFileSync, statSync } from 'node:fs';
import type { CliIO } from './io';
import { UsageError } from './io';
import { formatBytes, table } from './format';
import { clipText } from '../contract/echo';
import { loadAddon } from '../addon/load';
import { verdictLine } from '../contract/verdict';
import { formatReading } from '../contract/readings';
import { historyNote, type RunMeta } from '../contract/runs';
import { wholeCard, type CardMemory } from '../contract/card';
import { rankGroups } from '../contract/ranks';
import { SpecError, parseSpec, type Spec, type SpecInput } from '../contract/spec';
import { defaultHome } from '../paths';
import { RunStore } from '../store/store';
import { RunManager } from '../runner/manager';
import type { PeakTracker } from '../runner/summary';

/** A spec is a few KB (its longest lists, 4096 shapes, about 150 KB); a much larger file is not read
 *  (8 MiB still lets a compact list of 10^6 pairs, 6.5 MB, be refused by its length, with the limit named). */
export const MAX_SPEC_FILE_BYTES = 8 * 2 ** 20;

/** The spec file as JSON, with --device / --capacity applied. Bad files are usage errors. */
export function readSpecFile(file: string | undefined, overrides: { device?: string; capacity?: string }): SpecInput {
  if (!file) throw new UsageError('missing SPEC.json');
  const tooLarge = (bytes: number) =>
    new UsageError(`${file} is ${formatBytes(bytes)}: a spec file is at most ${formatBytes(MAX_SPEC_FILE_BYTES)}`);
  let text: string;
  try {
    if (file !== '-' && statSync(file).size > MAX_SPEC_FILE_BYTES) throw tooLarge(statSync(file).size);
    text = readFileSync(file === '-' ? 0 : file, 'utf8');
  } catch (err) {
    if (err instanceof UsageError) throw err;
    throw new UsageError(`cannot read ${file}: ${(err as Error).message}`);
  }
  if (text.length > MAX_SPEC_FILE_BYTES) throw tooLarge(Buffer.byteLength(text));
  let spec: unknown;
  try {
    spec = JSON.parse(text);
  } catch (err) {
    throw new UsageError(`${file} is not JSON: ${clipText((err as Error).message, 200)}`);
  }
  if (!spec || typeof spec !== 'object' || Array.isArray(spec)) throw new UsageError(`${file}: the spec must be a JSON object`);
  const out = { ...(spec as Record<string, unknown>) };
  if (overrides.device !== undefined) out.device = overrides.device;
  if (overrides.capacity !== undefined) out.capacity = overrides.capacity;
  return out as SpecInput;
}

/** Turns a SpecError into a usage error (exit 2) with every issue on its own line. */
export function specUsage(err: unknown): never {
  if (err instanceof SpecError) throw new UsageError(`invalid spec:\n  ${err.issues.join('\n  ')}`);
  throw err;
}

/** readSpecFile, then validation: nothing starts on a bad spec (exit 2 with every issue). */
export function loadSpecFile(
  file: string | undefined,
  overrides: { device?: string; capacity?: string },
): { input: SpecInput; spec: Spec } {
  const input = readSpecFile(file, overrides);
  try {
    return { input, spec: parseSpec(input) };
  } catch (err) {
    specUsage(err);
  }
}

export async function openManager(): Promise<RunManager> {
  const store = await RunStore.open(defaultHome());
  return new RunManager(loadAddon(), store);
}

/** Runs a sweep, fit or fixes until done or Ctrl-C: Ctrl-C cancels the runs in flight and
 *  the signal stops the next ones from starting. */
export async function untilInterrupted<T>(
  manager: RunManager,
  work: (signal: { cancelled: boolean }, started: (runId: string) => void) => Promise<T>,
): Promise<{ result: T; cancelled: boolean }> {
  const signal = { cancelled: false };
  // Sweeps, fit and fixes run a few at once: an interrupt cancels every one started (ended ones ignore it).
  const started = new Set<string>();
  const onSigint = () => {
    signal.cancelled = true;
    for (const id of started) manager.cancel(id);
  };
  process.once('SIGINT', onSigint);
  try {
    return { result: await work(signal, (id) => started.add(id)), cancelled: signal.cancelled };
  } finally {
    process.removeListener('SIGINT', onSigint);
  }
}

/** A progress line at most once a second, only once the run has gone on for a second. */
export function progressPrinter(io: CliIO, label: string, quiet: boolean): (t: PeakTracker) => void {
  const start = Date.now();
  let last = 0;
  return (t) => {
    if (quiet) return;
    const now = Date.now();
    if (now - start < 1000 || now - last < 1000) return;
    last = now;
    const at = t.phases.current();
    const s = t.latest;
    io.err(
      `${label}  ${((now - start) / 1000).toFixed(1)} s  it ${at.iteration < 0 ? '-' : at.iteration} ${at.phase || 'setup'}` +
        (s ? `  allocated ${formatBytes(s.allocated)}  reserved ${formatBytes(s.reserved)}` : '') +
        `  peak ${formatBytes(t.peakAllocated)}\n`,
    );
  };
}

/** The `--json` object: readings in bytes over the baseline, plus the OOM (or null). */
export function runJsonResult(meta: RunMeta): Record<string, unknown> {
  const s = meta.summary;
  return {
    id: meta.id,
    name: meta.name,
    status: meta.status,
    device: meta.device,
    // The answer first: fits, or what it needs on the card and the shortfall (margin < 0).
    verdict: s?.verdict ?? null,
    readings: s?.readings ?? {},
    // After an OOM there are no readings per rank, yet the classes and each rank's verdict.
    ...(s?.rank_class?.length
      ? { ranks: s.ranks ?? [], rank_class: s.rank_class, nccl: s.nccl ?? 0, rank_verdicts: s.rank_verdicts ?? [] }
      : {}),
    ...(s?.ranges ? { ranges: s.ranges } : {}),
    oom: s?.oom ?? null,
    error: s?.error ?? null,
    baseline: s?.baseline ?? null,
    peak_allocated: s?.peak_allocated ?? null,
    peak_reserved: s?.peak_reserved ?? null,
    peaks: s?.peaks ?? [],
    parameters: s?.parameters ?? null,
    trainable_parameters: s?.trainable_parameters ?? null,
    sdpa_backend: s?.sdpa_backend ?? null,
    context: s?.context ?? null,
    duration_ms: s?.duration_ms ?? null,
    sim_time_ms: s?.sim_time_ms ?? null,
    spec: meta.spec,
  };
}

/** The run as text; with its card (total), the whole-card line: reserved + CUDA context of total. */
export function describeRun(meta: RunMeta, card?: CardMemory): string {
  const s = meta.summary;
  const lines = [`run ${meta.id}  "${meta.name}"  ${meta.status}  on ${meta.device}`];
  if (!s) return lines.join('\n') + '\n';
  // The answer first: fits, or what it needs and how much is missing.
  if (s.verdict) lines.push(verdictLine(s.verdict));
  // Ranks that differ (uneven shards) each get their own answer.
  const groups = rankGroups(s);
  if (groups.length > 1) for (const g of groups) if (g.verdict) lines.push(`  ${g.label}: ${verdictLine(g.verdict.verdict)}`);
  const readings = Object.entries(s.readings);
  // A reading PyTorch itself does not fix shows the range its mechanism allows.
  const rangeOr = (k: string, v: number) => {
    const r = s.ranges?.[k];
    return r ? `${formatReading(k, r[0])}–${formatReading(k, r[1])}` : formatReading(k, v);
  };
  if (s.ranks && s.ranks.length > 1) {
    // one column per distinct rank (ranks PyTorch treats alike share a simulation)
    const cls = s.rank_class ?? s.ranks.map((_, i) => i);
    const shown = [...new Set(cls)];
    const head = shown.map((c) => {
      const members = cls.map((x, r) => (x === c ? r : -1)).filter((r) => r >= 0);
      return members.length === cls.length
        ? `every rank (${cls.length})`
        : `rank ${members.length > 3 ? `${members[0]}..${members[members.length - 1]}` : members.join(',')}`;
    });
    lines.push(
      '',
      table(
        ['reading', ...head],
        readings.map(([k]) => [k, ...shown.map((c) => rangeOr(k, s.ranks![c]?.[k] ?? 0))]),
      ).trimEnd(),
    );
  } else if (readings.length)
    lines.push(
      '',
      table(
        ['reading', 'value', 'size'],
        readings.map(([k, v]) => {
          const r = s.ranges?.[k];
          return [k, r ? `${r[0]}–${r[1]}` : String(v), rangeOr(k, v)];
        }),
      ).trimEnd(),
    );
  if (s.ranges && Object.keys(s.ranges).length)
    lines.push(
      "low–high: PyTorch does not fix these readings (DDP: NCCL's watchdog frees the first iteration's buckets when it next wakes); the rest are exact",
    );
  lines.push(
    '',
    `peak allocated ${formatBytes(s.peak_allocated)}  peak reserved ${formatBytes(s.peak_reserved)}  in ${s.duration_ms.toFixed(0)} ms`,
  );
  // What nvidia-smi shows: PyTorch's reserved memory plus the CUDA context and libraries.
  const whole = s.context !== undefined && card?.total ? { total: card.total, context: s.context, nccl: s.nccl ?? 0 } : null;
  if (whole) lines.push(`on the card: ${wholeCard(s.peak_reserved, whole)} (what nvidia-smi shows)`);
  else if (s.context)
    lines.push(
      `on the card: peak reserved + CUDA context ${formatBytes(s.context)} = ${formatBytes(s.peak_reserved + s.context)} (what nvidia-smi shows)`,
    );
  if (s.parameters !== undefined)
    lines.push(
      `${s.parameters.toLocaleString('en-US')} parameters` +
        (s.trainable_parameters !== s.parameters ? `, ${s.trainable_parameters.toLocaleString('en-US')} trainable` : '') +
        (s.sdpa_backend ? `; attention backend ${s.sdpa_backend}` : ''),
    );
  const note = historyNote(s.history);
  if (note) lines.push(note);
  if (s.oom) {
    lines.push(
      '',
      `OUT OF MEMORY in ${s.oom.phase || 'setup'}${s.oom.iteration >= 0 ? ` (iteration ${s.oom.iteration})` : ''}:`,
      s.oom.message,
    );
    lines.push(
      `largest category: ${s.oom.dominant.category} ${formatBytes(s.oom.dominant.bytes)}; reserved but unallocated ${formatBytes(s.oom.reserved_unallocated)}`,
    );
    if (whole) lines.push(`at the OOM: ${wholeCard(s.oom.reserved, whole).replace('peak reserved', 'reserved')}`);
    if (s.oom.suggestions.length) lines.push('changes the simulator found to fit, cheapest first:');
    for (const tip of s.oom.suggestions) lines.push(`  try ${tip}`);
  }
  if (s.error) lines.push('', `error: ${s.error}`);
  return lines.join('\n') + '\n';
}

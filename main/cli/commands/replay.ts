// `vramlab replay FILE.pickle`: replays a PyTorch memory snapshot's alloc/free trace through
// vramlab's allocator, under the snapshot's own settings or others, with an optional cap.
import { busiestDevice } from '../../snapshot/import';
import { openSnapshot } from '../open_snapshot';
import { minCapacity } from '../../snapshot/min_capacity';
import { diagnoseOom, type OomDiagnosis } from '../../snapshot/oom_diagnosis';
import { replayer, type ReplayOutcome, type Replayer } from '../../snapshot/replay';
import { parseSize } from '../../snapshot/sizes';
import { traceStats, type TraceStats } from '../../snapshot/stats';
import { parse } from '../args';
import { formatBytes, table } from '../format';
import { UsageError, type Command } from '../io';
import { deviceArg } from '../snapshot_args';

const USAGE = `usage: vramlab replay FILE.pickle [--alloc-conf STR] [--capacity SIZE] [--device N] [--json]
       vramlab replay FILE.pickle --grid [--alloc-conf STR]... [--capacity SIZE]... [--json]

Replays the alloc/free trace of a torch.cuda.memory._dump_snapshot() file through
vramlab's caching allocator (PyTorch 2.11's rules) and reports peak reserved memory,
device allocations, fragmentation and whether, and where, it would run out of memory.

  --alloc-conf STR   PYTORCH_CUDA_ALLOC_CONF to replay with (default: the snapshot's own)
  --capacity SIZE    device memory cap: 24GiB (binary), 24GB (decimal), 512MiB, or bytes;
                     "device" for the whole simulated device. Default: for a snapshot
                     that holds a recorded OOM, the cap that reproduces it (said so in
                     the output); else the whole device
  --device N         which device's trace (default: the one with the most events)
  --grid             try every --alloc-conf x every --capacity (defaults below) and tabulate,
                     then the smallest capacity each --alloc-conf fits in
  --json             print one JSON object (with --grid, a JSON array)

Grid defaults: the snapshot's settings, expandable_segments:True, max_split_size_mb:256,
max_split_size_mb:128, roundup_power2_divisions:4; capacities 16GiB, 24GiB, 40GiB, 80GiB
(and, for a snapshot that holds a recorded OOM, first the cap that reproduces it).

A trace that began late (history switched on after the model loaded, or a ring buffer
that dropped its oldest events) replays from the allocator's exact state at its first
event; counts are then the trace window's own. A recorded OOM is tried again: under the
job's cap it fails at the same event; under a larger one it shows whether it would fit.
The file is read by a safe pickle reader: nothing in it can run code.
`;

const GRID_CONFS = ['expandable_segments:True', 'max_split_size_mb:256', 'max_split_size_mb:128', 'roundup_power2_divisions:4'];
const GRID_CAPACITIES = ['16GiB', '24GiB', '40GiB', '80GiB'];

function outcomeJson(o: ReplayOutcome) {
  return {
    alloc_conf: o.allocConf,
    capacity: o.capacity,
    peak_allocated: o.peakAllocated,
    peak_reserved: o.peakReserved,
    num_device_alloc: o.numDeviceAlloc,
    num_device_free: o.numDeviceFree,
    num_ooms: o.numOoms,
    num_alloc_retries: o.numAllocRetries,
    reserved_unallocated_at_peak: o.unallocatedAtPeak,
    recorded_ooms: o.oomAttempts.map((a) => ({ event_index: a.eventIndex, size: a.size, reproduced: a.failed })),
    first_oom: o.firstOom && {
      event_index: o.firstOom.eventIndex,
      op_index: o.firstOom.opIndex,
      size: o.firstOom.size,
      message: o.firstOom.message,
      frames: o.firstOom.frames,
    },
  };
}

function diagnosisJson(d: OomDiagnosis) {
  return {
    event_index: d.eventIndex,
    size: d.size,
    device_free: d.deviceFree,
    capped: d.capped,
    reserved: d.reserved,
    reproducing_caps: d.reproducingCaps,
    ...(d.note ? { note: d.note } : {}),
  };
}

/** A cap as --capacity takes it: 2GiB, 1536MiB. */
const capArg = (b: number) => (b % 2 ** 30 === 0 ? `${b / 2 ** 30}GiB` : `${b / 2 ** 20}MiB`);

/** What a recorded OOM says, and the cap that reproduces it. */
export function describeOom(d: OomDiagnosis): string {
  const lines = [
    `recorded OOM at event ${d.eventIndex}: ${formatBytes(d.size)} requested with ${formatBytes(d.reserved)} reserved; ` +
      `CUDA reported ${formatBytes(d.deviceFree)} free, so ` +
      (d.capped ? 'a memory cap (set_per_process_memory_fraction), not the card, refused it' : 'the card itself was full'),
  ];
  const c = d.reproducingCaps;
  if (c) {
    lines.push(
      `  caps from ${formatBytes(c.low)} to ${formatBytes(c.high)} reproduce it at this event: replay with --capacity ${capArg(c.suggested)}`,
    );
  } else {
    lines.push(`  ${d.note ?? 'no cap reproduces it at this event in the replay'}`);
  }
  return lines.join('\n') + '\n';
}

function recordedJson(st: TraceStats) {
  return {
    events: st.events,
    late_start: st.lateStart,
    peak_requested: st.peakAllocated.bytes,
    peak_reserved: st.peakReserved.bytes,
    num_device_alloc: st.counts.segment_alloc + st.counts.segment_map,
    num_device_free: st.counts.segment_free + st.counts.segment_unmap,
    num_ooms: st.counts.oom,
  };
}

/** "device" (or "none", "whole") asks for no cap: the whole simulated device. */
const WHOLE_DEVICE = /^(device|none|whole)$/i;

const capLabel = (c: number | null) => (c === null ? 'device' : formatBytes(c));
const oomLabel = (o: ReplayOutcome) => {
  const recorded = o.oomAttempts.length ? (o.oomAttempts.some((a) => a.failed) ? ' (the recorded OOM)' : '; recorded OOM avoided') : '';
  if (!o.firstOom) return `fits${recorded}`;
  return `OOM at event ${o.firstOom.eventIndex}${o.oomAttempts.some((a) => a.failed && a.eventIndex === o.firstOom!.eventIndex) ? ' (the recorded OOM)' : ''}`;
};

/** A replay that cannot start: the trace's starting state alone is more than the cap. */
type Misfit = { allocConf: string; capacity: number; misfit: string };

function seededRun(r: Replayer, st: TraceStats, allocConf: string, capacity: number | null): ReplayOutcome | Misfit {
  const start = st.initial.reserved;
  if (r.trace.seed && capacity !== null && start > capacity)
    return { allocConf, capacity, misfit: `does not fit: ${formatBytes(start)} reserved before the trace's first event` };
  return r.run({ allocConf, capacity });
}

const misfitJson = (m: Misfit) => ({ alloc_conf: m.allocConf, capacity: m.capacity, fits: false, reason: m.misfit });

const replay: Command = async (args, io) => {
  const { values, positionals } = parse(
    args,
    {
      'alloc-conf': { type: 'string', multiple: true },
      capacity: { type: 'string', multiple: true },
      device: { type: 'string' },
      grid: { type: 'boolean' },
      json: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
    true,
  );
  if (values.help) {
    io.out(USAGE);
    return 0;
  }
  if (positionals.length !== 1) throw new UsageError(`expected one snapshot file\n\n${USAGE}`);
  const confs = values['alloc-conf'] ?? [];
  const caps = (values.capacity ?? []).map((c) => {
    if (WHOLE_DEVICE.test(c.trim())) return null;
    try {
      return parseSize(c);
    } catch (err) {
      throw new UsageError((err as Error).message);
    }
  });
  if (!values.grid && (confs.length > 1 || caps.length > 1)) {
    throw new UsageError('several --alloc-conf or --capacity values need --grid');
  }

  const long = confs.find((c) => c.length > 1024);
  if (long !== undefined) throw new UsageError(`--alloc-conf must be at most 1024 characters (got ${long.length})`);
  const asked = values.device !== undefined ? deviceArg(values.device) : null;

  const snap = openSnapshot(positionals[0], io);
  const device = asked ?? busiestDevice(snap);
  if (asked !== null && !snap.deviceTraces[device]?.length) throw new UsageError(`the snapshot has no trace for device ${device}`);
  if (!snap.deviceTraces[device]?.length) {
    throw new Error('the snapshot has no allocation trace (record it with torch.cuda.memory._record_memory_history() before the work)');
  }
  const r = replayer(snap, device);
  const st = traceStats(snap, device);
  // Only the first recorded OOM is searched for its cap (each search is a dozen replays).
  const diagnosis = st.ooms.length && !caps.length ? diagnoseOom(r, st.ooms[0], st.events) : null;

  if (values.grid) {
    const gridConfs = confs.length ? confs : [r.ownConf, ...GRID_CONFS];
    const ownCap = diagnosis?.reproducingCaps?.suggested;
    const gridCaps = caps.length ? caps : [...(ownCap ? [ownCap] : []), ...GRID_CAPACITIES.map(parseSize)];
    // A cap below the state the trace starts from fails that cell only.
    const cells = gridConfs.flatMap((conf) => gridCaps.map((cap) => seededRun(r, st, conf, cap)));
    if (values.json) {
      io.out(
        JSON.stringify(
          cells.map((c) => ('misfit' in c ? misfitJson(c) : outcomeJson(c))),
          null,
          2,
        ) + '\n',
      );
      return 0;
    }
    io.out(
      table(
        ['alloc conf', 'capacity', 'peak reserved', 'device allocs', 'unallocated at peak', 'outcome'],
        cells.map((o) =>
          'misfit' in o
            ? [o.allocConf || '(default)', capLabel(o.capacity), '-', '-', '-', o.misfit]
            : [
                o.allocConf || '(default)',
                capLabel(o.capacity),
                formatBytes(o.peakReserved),
                String(o.numDeviceAlloc),
                o.unallocatedAtPeak === null ? '-' : formatBytes(o.unallocatedAtPeak),
                oomLabel(o),
              ],
        ),
      ),
    );
    // The question a grid is asked for: how small a card each setting gets away with.
    const mins = gridConfs.map((conf) => minCapacity(r, conf, st.events));
    io.out('\nsmallest capacity that fits (bisection by replay, 2 MiB steps):\n');
    io.out(
      table(
        ['alloc conf', 'smallest capacity', 'replays'],
        mins.map((m) => [
          m.allocConf || '(default)',
          m.capacity === null ? (m.note ?? '-') : `${formatBytes(m.capacity)} (${m.capacity / 2 ** 20} MiB)`,
          String(m.replays),
        ]),
      ),
    );
    return 0;
  }

  // An OOM snapshot answers "what happened under the job's cap" first: without --capacity the
  // replay runs under the cap that reproduces the recorded OOM (on the whole device it would
  // only say the OOM was avoided, which the job never saw).
  const recordedCap = diagnosis?.reproducingCaps?.suggested ?? null;
  const capSource = caps.length ? (caps[0] === null ? 'device' : 'given') : recordedCap !== null ? 'recorded' : 'device';
  const cap = caps.length ? caps[0] : recordedCap;
  const one = seededRun(r, st, confs[0] ?? r.ownConf, cap);
  if ('misfit' in one) throw new Error(`${one.misfit} (--capacity ${formatBytes(one.capacity)})`);
  const whatIf = one;
  if (values.json) {
    const rec = { ...recordedJson(st), ...(diagnosis ? { oom: diagnosisJson(diagnosis) } : {}) };
    io.out(JSON.stringify({ ...outcomeJson(whatIf), capacity_source: capSource, device, recorded: rec }, null, 2) + '\n');
    return 0;
  }

  // The snapshot's own settings beside a what-if: at the recorded cap both run under it; a
  // --capacity given by hand is compared with the own settings on the whole device.
  const own = confs.length ? r.run({ capacity: capSource === 'recorded' ? cap : null }) : capSource === 'given' ? r.run() : whatIf;
  const cols: [string, ReplayOutcome][] = [
    [`replay (${own.allocConf || 'default settings'}${own.capacity !== null ? `, cap ${capLabel(own.capacity)}` : ''})`, own],
  ];
  if (own !== whatIf) cols.push([`what-if (${whatIf.allocConf || 'default'}, cap ${capLabel(whatIf.capacity)})`, whatIf]);
  const rec = recordedJson(st);
  const row = (label: string, recorded: string, f: (o: ReplayOutcome) => string) => [label, recorded, ...cols.map(([, o]) => f(o))];
  io.out(
    `${positionals[0]}: device ${device}, ${st.events} events${st.lateStart ? ` (trace started late or was truncated: replayed from the allocator's state at its first event, ${formatBytes(st.initial.reserved)} reserved in ${st.start.segments} segments; counts are the window's)` : ''}\n\n`,
  );
  if (diagnosis) io.out(describeOom(diagnosis) + '\n');
  if (capSource === 'recorded')
    io.out(
      `replayed under the recorded cap, ${formatBytes(cap!)} (the cap that reproduces the recorded OOM); ` +
        `--capacity device replays on the whole device, --capacity SIZE under another cap\n\n`,
    );
  io.out(
    table(
      ['', 'recorded', ...cols.map(([name]) => name)],
      [
        row('peak reserved', formatBytes(rec.peak_reserved), (o) => formatBytes(o.peakReserved)),
        row('peak allocated', `${formatBytes(rec.peak_requested)} requested`, (o) => formatBytes(o.peakAllocated)),
        row('device allocations', String(rec.num_device_alloc), (o) => String(o.numDeviceAlloc)),
        row('device frees', String(rec.num_device_free), (o) => String(o.numDeviceFree)),
        row('unallocated at peak', formatBytes(st.unallocatedAtPeakReserved), (o) =>
          o.unallocatedAtPeak === null ? '-' : formatBytes(o.unallocatedAtPeak),
        ),
        row('OOMs', String(rec.num_ooms), (o) => String(o.numOoms)),
        row('outcome', rec.num_ooms ? `OOM at event ${st.ooms[0].eventIndex}` : 'ran', oomLabel),
      ],
    ),
  );
  for (const [name, o] of cols) {
    if (!o.firstOom) continue;
    io.out(`\n${name}: first OOM at trace event ${o.firstOom.eventIndex} (${formatBytes(o.firstOom.size)} requested)\n`);
    io.out(`  ${o.firstOom.message.split('\n')[0]}\n`);
    for (const f of o.firstOom.frames) io.out(`    at ${f}\n`);
  }
  if (r.trace.unmatchedFrees) io.out(`\nnote: ${r.trace.unmatchedFrees} frees of unknown allocations were skipped\n`);
  if (r.trace.lateStart && !r.trace.seed) {
    io.out(
      '\nnote: the state before the trace holds expandable segments, which a replay cannot yet start from: its live allocations were made again instead (approximate)\n',
    );
  }
  for (const p of r.trace.start.problems) io.out(`warning: ${p}\n`);
  return 0;
};

export default replay;

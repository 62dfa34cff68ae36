// `vramlab snapshot ...`: PyTorch memory snapshots in and out.
//   info FILE.pickle             what the trace says (peaks, largest allocations, OOMs)
//   export RUN_ID -o OUT         a stored run as a snapshot pickle
//   export --from-replay FILE -o OUT   a what-if replay of a snapshot, as a snapshot
import { writeFileSync } from 'node:fs';
import { historyNote } from '../../contract/runs';
import { defaultHome } from '../../paths';
import { exportRunRecord, replayHistoryToSnapshot, runHistory, snapshotToBytes } from '../../snapshot/export';
import { HISTORY_CAP } from '../../store/decimate';
import { busiestDevice } from '../../snapshot/import';
import { openSnapshot } from '../open_snapshot';
import { replayer } from '../../snapshot/replay';
import { parseSize } from '../../snapshot/sizes';
import { traceStats } from '../../snapshot/stats';
import type { WhereMemoryWas } from '../../snapshot/where';
import { RunStore } from '../../store/store';
import { parse } from '../args';
import { formatBytes, table } from '../format';
import { UsageError, type CliIO, type Command } from '../io';
import { quote } from '../../contract/echo';
import { checkDevice, deviceArg, topArg } from '../snapshot_args';

const USAGE = `usage: vramlab snapshot info FILE.pickle [--device N] [--top N] [--json]
       vramlab snapshot export RUN_ID -o OUT.pickle
       vramlab snapshot export --from-replay FILE.pickle -o OUT.pickle [--alloc-conf STR] [--capacity SIZE]

info     summarises a torch.cuda.memory._dump_snapshot() file (read safely: no code runs).
export   writes a snapshot pickle in PyTorch's format, for
         python -m torch.cuda._memory_viz trace_plot OUT.pickle -o OUT.html
         or pytorch.org/memory_viz. RUN_ID is a run from the run store (its allocator
         history must have been on); --from-replay replays FILE under the given settings.
`;

const snapshot: Command = async (args, io) => {
  const [sub, ...rest] = args;
  if (!sub || sub === '--help' || sub === '-h') {
    io.out(USAGE);
    return sub ? 0 : 2;
  }
  if (sub === 'info') return info(rest, io);
  if (sub === 'export') return exportCmd(rest, io);
  throw new UsageError(`unknown subcommand ${quote(sub, 40)}\n\n${USAGE}`);
};

async function info(args: string[], io: CliIO): Promise<number> {
  const { values, positionals } = parse(
    args,
    { device: { type: 'string' }, json: { type: 'boolean' }, top: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
    true,
  );
  if (values.help) {
    io.out(USAGE);
    return 0;
  }
  if (positionals.length !== 1) throw new UsageError('expected one snapshot file');
  const top = values.top !== undefined ? topArg(values.top) : 10;
  const asked = values.device !== undefined ? deviceArg(values.device) : null;
  const snap = openSnapshot(positionals[0], io);
  const device = asked ?? busiestDevice(snap);
  checkDevice(snap, device, asked !== null);
  const st = traceStats(snap, device, { top, maxPoints: 200 });
  if (values.json) {
    io.out(JSON.stringify({ segments: snap.segments.length, ...st }, null, 2) + '\n');
    return 0;
  }
  io.out(`${positionals[0]}: device ${device}, ${st.events} trace events, ${snap.segments.length} segments at the end\n`);
  if (st.lateStart) {
    io.out(
      `trace started late or was truncated (history switched on after the first allocation, or the ring buffer dropped older events):\n` +
        `  before its first event ${formatBytes(st.initial.reserved)} were reserved in ${st.start.segments} segments, ` +
        `${formatBytes(st.start.allocatedBlocks)} allocated in ${st.start.allocations} blocks (rebuilt exactly from the final state)\n`,
    );
  }
  for (const p of st.start.problems) io.out(`warning: ${p}\n`);
  io.out(
    table(
      ['', 'bytes', 'at event'],
      [
        ['peak reserved', formatBytes(st.peakReserved.bytes), String(st.peakReserved.eventIndex)],
        ['peak requested', formatBytes(st.peakAllocated.bytes), String(st.peakAllocated.eventIndex)],
        ['unallocated at peak', formatBytes(st.unallocatedAtPeakReserved), ''],
        ['reserved at end', formatBytes(st.final.reserved), ''],
      ],
    ),
  );
  io.out('\nlargest allocations:\n');
  for (const a of st.largest) {
    io.out(`  ${formatBytes(a.size).padStart(11)}  events ${a.allocIndex}..${a.freeIndex ?? 'end'}  ${a.frames[0] ?? ''}\n`);
  }
  io.out(`\nwhere the memory was at peak (${formatBytes(st.peakAllocated.bytes)} requested, event ${st.peakAllocated.eventIndex}):\n`);
  io.out(whereText(st.whereAtPeak));
  for (const o of st.ooms) {
    io.out(
      `\nrecorded OOM at event ${o.eventIndex}: ${formatBytes(o.size)} requested with ${formatBytes(o.reserved)} reserved; ` +
        `CUDA reported ${formatBytes(o.deviceFree)} free (${o.deviceFree > o.size ? 'a memory cap refused it, not the card' : 'the card was full'})\n`,
    );
    for (const f of o.frames) io.out(`    at ${f}\n`);
    if (o.where) io.out(`  where the memory was:\n${whereText(o.where)}`);
  }
  if (st.ooms.length) io.out(`\n\`vramlab replay ${positionals[0]}\` finds the cap that reproduces the OOM; --grid tries other settings\n`);
  return 0;
}

function whereText(w: WhereMemoryWas): string {
  return w.sites
    .map((x) => {
      const share = w.total ? ` ${((100 * x.bytes) / w.total).toFixed(0).padStart(3)}%` : '';
      const via = x.path.length > 1 ? `\n${' '.repeat(26)}via ${x.path.slice(0, -1).join(' > ')}` : '';
      return `  ${formatBytes(x.bytes).padStart(11)}${share}  ${String(x.count).padStart(5)}x  ${x.site}${x.op ? `  (${x.op})` : ''}${via}\n`;
    })
    .join('');
}

async function exportCmd(args: string[], io: CliIO): Promise<number> {
  const { values, positionals } = parse(
    args,
    {
      out: { type: 'string', short: 'o' },
      'from-replay': { type: 'string' },
      'alloc-conf': { type: 'string' },
      capacity: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
    true,
  );
  if (values.help) {
    io.out(USAGE);
    return 0;
  }
  if (!values.out) throw new UsageError('-o OUT.pickle is required');
  let bytes: Buffer;
  if (values['from-replay']) {
    if (positionals.length) throw new UsageError('give either RUN_ID or --from-replay FILE, not both');
    const snap = openSnapshot(values['from-replay'], io);
    const device = busiestDevice(snap);
    const r = replayer(snap, device);
    let capacity: number | null;
    try {
      capacity = values.capacity ? parseSize(values.capacity) : null;
    } catch (err) {
      throw new UsageError((err as Error).message);
    }
    const { outcome, history, segments } = r.runWithHistory({ allocConf: values['alloc-conf'], capacity });
    if (!history.length) throw new Error("the native replay returned no allocator history; this addon build can't export replays");
    // A replay from a seeded state needs its final segments: its history never made them.
    bytes = snapshotToBytes(replayHistoryToSnapshot(history, r.trace, snap, outcome.allocConf, r.trace.seed ? segments : undefined));
  } else {
    if (positionals.length !== 1) throw new UsageError(`expected RUN_ID (or --from-replay FILE)\n\n${USAGE}`);
    const store = await RunStore.open(defaultHome());
    // A run stored before history was capped is read capped: the pickle stays within bounds.
    const record = await store.get(positionals[0], { maxEvents: HISTORY_CAP });
    if (!record.events.some((e) => e.type === 'alloc')) {
      throw new Error(`run ${positionals[0]} has no allocator history (run it with history on to export a snapshot)`);
    }
    bytes = snapshotToBytes(exportRunRecord(record));
    const h = runHistory(record);
    const note = historyNote(h);
    if (note) io.out(note + '\n');
  }
  writeFileSync(values.out, bytes);
  io.out(`wrote ${values.out} (${formatBytes(bytes.length)})\n`);
  return 0;
}

export default snapshot;

// `vramlab fixes SPEC.json`: a spec whose sequence lengths vary, run once per usual fix
// (padding to buckets, longest first, packing, expandable_segments, empty_cache cadence).
import { parse } from '../args';
import type { Command } from '../io';
import { formatBytes, table } from '../format';
import { openManager, readSpecFile, specUsage, untilInterrupted } from '../support';
import { lengthFixSpecs, runFixes } from '../../runner/fixes';
import { wholeCard } from '../../contract/card';

const USAGE = `usage: vramlab fixes SPEC.json [--device ID] [--capacity SIZE] [--json]

SPEC.json trains a transformer on per-iteration shapes (a list, or a draw such as
  "shapes": {"batch": 8, "steps": 200, "seed": 1, "seq": {"min": 64, "max": 1024}}).
Runs it as is and under each usual fix for varying lengths, one after another, and
prints where reserved memory peaked, how many segments were allocated, and the step
of an out-of-memory error.
`;

const fixes: Command = async (args, io) => {
  const { values, positionals } = parse(
    args,
    {
      device: { type: 'string' },
      capacity: { type: 'string' },
      json: { type: 'boolean' },
      quiet: { type: 'boolean', short: 'q' },
      help: { type: 'boolean', short: 'h' },
    },
    true,
  );
  if (values.help) {
    io.out(USAGE);
    return 0;
  }
  if (positionals.length !== 1) {
    io.err(USAGE);
    return 2;
  }
  const base = readSpecFile(positionals[0], { device: values.device, capacity: values.capacity });
  let variants;
  try {
    variants = lengthFixSpecs(base); // every variant is valid before the first run
  } catch (err) {
    specUsage(err);
  }
  const manager = await openManager();
  const { result, cancelled } = await untilInterrupted(manager, (signal, started) =>
    runFixes(manager, base, {
      signal,
      onRunStarted: (run, i) => {
        started(run.runId);
        if (!values.quiet) io.err(`fix: ${variants![i].fix.label}  (${i + 1}/${variants!.length})\n`);
      },
    }),
  );
  if (values.json) io.out(JSON.stringify(result) + '\n');
  else {
    const card = { total: result.total, context: result.context };
    io.out(
      `capacity ${formatBytes(result.capacity)}; the largest peak on the card: ${wholeCard(Math.max(...result.rows.map((r) => r.peak_reserved)), card)}\n`,
    );
    io.out(
      table(
        [
          'fix',
          'status',
          'steps',
          'padding',
          'peak reserved (on the card)',
          'reserved at end (over the base)',
          'segments allocated',
          'OOM at step',
          'run',
        ],
        result.rows.map((r) => [
          r.label,
          r.status,
          String(r.steps),
          r.tokens ? `${((100 * r.padding) / r.tokens).toFixed(1)}%` : '-',
          formatBytes(r.peak_reserved),
          r.reserved_end === null ? '-' : formatBytes(r.reserved_end),
          r.device_allocs === null ? '-' : String(r.device_allocs),
          r.oom_iteration === null ? '-' : String(r.oom_iteration),
          r.runId,
        ]),
      ),
    );
  }
  return result.rows.some((r) => r.status === 'error') ? 1 : cancelled ? 130 : 0;
};

export default fixes;

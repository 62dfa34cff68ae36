// `vramlab fit SPEC.json`: the largest batch that runs without OOM.
import { parse } from '../args';
import { UsageError, type Command } from '../io';
import { formatBytes, table } from '../format';
import { LIMITS } from '../../contract/spec';
import { loadAddon } from '../../addon/load';
import { loadSpecFile, openManager } from '../../runner/cli_support';
import { FitCancelled, runFit } from '../../runner/fit';
import { deviceTotal } from '../../runner/device_total';

const USAGE = `usage: vramlab fit SPEC.json [--device ID] [--capacity SIZE] [--max N] [--json]

Finds the largest batch size SPEC.json runs at without running out of memory on its
device (or under --capacity), doubling from the spec's batch and then bisecting.
`;

const fit: Command = async (args, io) => {
  const { values, positionals } = parse(
    args,
    {
      device: { type: 'string' },
      capacity: { type: 'string' },
      max: { type: 'string' },
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
  const { input, spec } = loadSpecFile(positionals[0], { device: values.device, capacity: values.capacity });
  const max = values.max === undefined ? undefined : Number(values.max);
  if (max !== undefined && !(Number.isInteger(max) && max >= 1 && max <= LIMITS.batch))
    throw new UsageError(`--max must be an integer from 1 to ${LIMITS.batch}`);
  const manager = await openManager();
  const signal = { cancelled: false };
  let current: string | null = null;
  const onSigint = () => {
    signal.cancelled = true;
    if (current) manager.cancel(current);
  };
  process.once('SIGINT', onSigint);
  try {
    const result = await runFit(manager, input, deviceTotal(loadAddon(), spec.device), {
      maxBatch: max,
      signal,
      onRunStarted: (r) => (current = r.runId),
      onProbe: (p) => {
        if (!values.quiet) io.err(`fit  batch ${p.batch}: ${p.ok ? 'fits' : 'out of memory'}  peak ${formatBytes(p.peak_allocated)}\n`);
      },
    });
    if (values.json) io.out(JSON.stringify(result) + '\n');
    else {
      io.out(table(['batch', 'fits', 'peak allocated', 'peak reserved', 'run'], result.probes.map((p) => [String(p.batch), p.ok ? 'yes' : 'no', formatBytes(p.peak_allocated), formatBytes(p.peak_reserved), p.runId])));
      io.out(`\nlargest batch that fits in ${formatBytes(result.capacity)}: ${result.batch}\n`);
    }
    return 0;
  } catch (err) {
    if (err instanceof FitCancelled) {
      io.err('fit cancelled\n');
      return 130;
    }
    throw err;
  } finally {
    process.removeListener('SIGINT', onSigint);
  }
};

export default fit;

// `vramlab run SPEC.json`: one experiment, headless.
import { writeFileSync } from 'node:fs';
import { parse } from '../args';
import type { Command } from '../io';
import { describeRun, loadSpecFile, openManager, progressPrinter, readSpecFile, runJsonResult } from '../support';
import { launchSpec, runLaunched, wantsLaunch } from '../launch_run';
import { timelineCsv } from '../../export/timeline_csv';
import { specHelp } from '../spec_help';

const USAGE =
  () => `usage: vramlab run SPEC.json [--device ID] [--capacity SIZE] [--name NAME] [--json] [--csv FILE] [--fail-on-oom] [--quiet]

Runs the experiment SPEC.json describes and keeps it in the run store (~/.vramlab, or
VRAMLAB_HOME). Progress goes to stderr for long runs.

  --json         one JSON object on stdout: readings (bytes over the baseline), oom, peaks
  --csv FILE     write the run's timeline as CSV
  --fail-on-oom  exit 3 when the run ran out of memory (by default an OOM is a result)
  --launch       run a data-parallel spec as real rank processes on a sim: device too

A spec with "parallel" on cuda:0 runs for real: one process per rank on cuda:0..W-1
through NCCL (W at most the GPUs visible), each rank's readings, losses and final
parameters read back (not kept in the run store).

${specHelp()}`;

const run: Command = async (args, io) => {
  const { values, positionals } = parse(
    args,
    {
      device: { type: 'string' },
      capacity: { type: 'string' },
      name: { type: 'string' },
      json: { type: 'boolean' },
      csv: { type: 'string' },
      'fail-on-oom': { type: 'boolean' },
      quiet: { type: 'boolean', short: 'q' },
      launch: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
    true,
  );
  if (values.help) {
    io.out(USAGE());
    return 0;
  }
  if (positionals.length !== 1) {
    io.err(USAGE());
    return 2;
  }
  const overrides = { device: values.device, capacity: values.capacity };
  const input = readSpecFile(positionals[0], overrides);
  if (wantsLaunch(input, !!values.launch)) return runLaunched(launchSpec(input), !!values.json, io);
  const { spec } = loadSpecFile(positionals[0], overrides);
  const manager = await openManager();
  const started = await manager.start(spec, { name: values.name, onBatch: progressPrinter(io, 'run', !!values.quiet) });
  const onSigint = () => manager.cancel(started.runId);
  process.once('SIGINT', onSigint);
  let meta;
  try {
    meta = await started.done;
  } finally {
    process.removeListener('SIGINT', onSigint);
  }
  if (values.csv) writeFileSync(values.csv, timelineCsv(await manager.store.get(meta.id)));
  io.out(values.json ? JSON.stringify(runJsonResult(meta)) + '\n' : describeRun(meta, manager.card(meta.device)));
  if (meta.status === 'error') {
    if (values.json) io.err(`vramlab run: ${meta.summary?.error ?? 'run failed'}\n`);
    return 1;
  }
  if (meta.status === 'cancelled') return 130;
  if (meta.status === 'oom' && values['fail-on-oom']) return 3;
  return 0;
};

export default run;

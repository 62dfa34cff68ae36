// `vramlab sweep SPEC.json --param P --values V1,V2,...`: a run per value.
import { writeFileSync } from 'node:fs';
import { parse } from '../args';
import { UsageError, type Command } from '../io';
import { formatBytes, table } from '../format';
import { SWEEP_PARAMS } from '../../contract/sweep_params';
import { openManager, readSpecFile, specUsage, untilInterrupted } from '../support';
import { checkSweep, runSweep, type CheckedSweep } from '../../runner/sweep';
import { summaryCsv } from '../../export/summary_csv';
import { DEFAULT_PARALLEL } from '../../runner/pool';

const USAGE = `usage: vramlab sweep SPEC.json --param NAME --values V1,V2,... [--device ID] [--capacity SIZE] [--parallel N] [--json] [--csv FILE]

Runs SPEC.json once per value of one parameter: ${SWEEP_PARAMS.join(', ')}.
Model fields (seq, dim, heads, ...) go inside model, rank inside finetune (LoRA).
Values are comma separated (numbers, words, every:N for a checkpoint interval) or a JSON array.
  --csv FILE  one summary row per run (spec columns and readings)
  --parallel N  runs at once (default ${DEFAULT_PARALLEL}: the cores less one, at least 2
                where there are 2, at most 4)
`;

export function parseValues(text: string): unknown[] {
  const t = text.trim();
  if (t.startsWith('[')) {
    try {
      const v = JSON.parse(t);
      if (Array.isArray(v)) return v;
    } catch {
      /* fall through to the error */
    }
    throw new UsageError('--values: not a JSON array');
  }
  return t
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length)
    .map((s) => {
      if (/^-?\d+(\.\d+)?$/.test(s)) return Number(s);
      if (s === 'true' || s === 'false') return s === 'true';
      const every = /^every:(\d+)$/.exec(s);
      if (every) return { every: Number(every[1]) };
      return s;
    });
}

const sweep: Command = async (args, io) => {
  const { values, positionals } = parse(
    args,
    {
      param: { type: 'string' },
      values: { type: 'string' },
      device: { type: 'string' },
      capacity: { type: 'string' },
      json: { type: 'boolean' },
      csv: { type: 'string' },
      parallel: { type: 'string' },
      quiet: { type: 'boolean', short: 'q' },
      help: { type: 'boolean', short: 'h' },
    },
    true,
  );
  if (values.help) {
    io.out(USAGE);
    return 0;
  }
  if (positionals.length !== 1 || !values.param || !values.values) {
    io.err(USAGE);
    return 2;
  }
  const parallel = values.parallel === undefined ? undefined : Number(values.parallel);
  if (parallel !== undefined && !(Number.isInteger(parallel) && parallel >= 1 && parallel <= 16))
    throw new UsageError(`--parallel must be an integer from 1 to 16 (got ${values.parallel})`);
  const base = readSpecFile(positionals[0], { device: values.device, capacity: values.capacity });
  const list = parseValues(values.values);
  let sweep: CheckedSweep;
  try {
    sweep = checkSweep(base, values.param, list); // every value's spec, validated once, before the first run
  } catch (err) {
    specUsage(err);
  }
  const manager = await openManager();
  const { result, cancelled } = await untilInterrupted(manager, (signal, started) =>
    runSweep(manager, sweep, {
      signal,
      parallel,
      onRunStarted: (run, i) => {
        started(run.runId);
        if (!values.quiet) io.err(`sweep ${values.param}=${JSON.stringify(list[i])}  (${i + 1}/${list.length})\n`);
      },
    }),
  );
  const metas = await Promise.all(result.runs.map((r) => manager.store.meta(r.runId)));
  if (values.csv) writeFileSync(values.csv, summaryCsv(metas));
  if (values.json)
    io.out(
      JSON.stringify({
        ...result,
        runs: result.runs.map((r, i) => ({ ...r, readings: metas[i].summary?.readings ?? {}, oom: metas[i].summary?.oom ?? null })),
      }) + '\n',
    );
  else
    io.out(
      table(
        [values.param, 'status', 'peak allocated', 'peak reserved', '+ CUDA context', 'run'],
        result.runs.map((r) => [
          typeof r.value === 'object' ? JSON.stringify(r.value) : String(r.value),
          r.status,
          formatBytes(r.peak_allocated),
          formatBytes(r.peak_reserved),
          formatBytes(r.peak_reserved + result.context + (metas[result.runs.indexOf(r)]?.summary?.nccl ?? 0)),
          r.runId,
        ]),
      ) +
        `\n+ CUDA context: reserved plus the card's CUDA context & libraries (${formatBytes(result.context)}), and NCCL's buffers per rank for data-parallel runs, as nvidia-smi shows it, of ${formatBytes(result.total)}\n`,
    );
  return result.runs.some((r) => r.status === 'error') ? 1 : cancelled ? 130 : 0;
};

export default sweep;

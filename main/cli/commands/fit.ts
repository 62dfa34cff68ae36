// `vramlab fit SPEC.json [--param batch|seq|new_tokens]`: the largest value that runs without OOM.
import { parse } from '../args';
import { UsageError, type Command } from '../io';
import { formatBytes, table } from '../format';
import { FIT_PARAMS, type FitParam } from '../../contract/sweep_params';
import { loadSpecFile, openManager, untilInterrupted } from '../support';
import { FIT_SEARCH_PROBES, FitCancelled, fitLimit, runFit } from '../../runner/fit';
import { wholeCard } from '../../contract/card';
import { fitAnswer } from '../../contract/fit_words';

const USAGE = `usage: vramlab fit SPEC.json [--param ${FIT_PARAMS.join('|')}] [--device ID] [--capacity SIZE] [--max N] [--probes N] [--json]

Finds the largest value of --param (default batch) SPEC.json runs at without running out
of memory on its device (or under --capacity): the largest batch, the longest sequence
(model.seq, transformers) or the longest generation (new_tokens, mode "generate") that
fits, for any family and fine-tuning method. Under a cap "fits" need not be monotone
(fragmentation: a length can run out while a longer one fits), so after doubling and
bisecting, fit finds the allocated bound (the largest value whose peak *allocated* bytes,
which do grow with the value, are within the limit: nothing above it can fit) and probes
the values between the bisection's answer and that bound, top down, coarse to fine, at
most --probes of them (default ${FIT_SEARCH_PROBES}); those left unprobed are named (JSON: bound,
unexplored, stride). Values below the answer that run out are named too (runsOutBelow).
--param world (data parallel, spec.parallel; FSDP2 when the spec has none) finds the
smallest number of GPUs that fits instead, over 1, 2, 4, 8, ...
The whole card counts, as nvidia-smi sees it: PyTorch's reserved memory plus the CUDA
context and libraries ('vramlab devices' lists each card's), and NCCL's buffers per rank.
`;

const fit: Command = async (args, io) => {
  const { values, positionals } = parse(
    args,
    {
      param: { type: 'string' },
      device: { type: 'string' },
      capacity: { type: 'string' },
      max: { type: 'string' },
      probes: { type: 'string' },
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
  const param = (values.param ?? 'batch') as FitParam;
  if (!FIT_PARAMS.includes(param)) throw new UsageError(`--param must be one of ${FIT_PARAMS.join(', ')} (got "${values.param}")`);
  let limit: number;
  try {
    limit = fitLimit(spec, param);
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  const max = values.max === undefined ? undefined : Number(values.max);
  if (max !== undefined && !(Number.isInteger(max) && max >= 1 && max <= limit))
    throw new UsageError(`--max must be an integer from 1 to ${limit} (got ${values.max})`);
  const probes = values.probes === undefined ? undefined : Number(values.probes);
  if (probes !== undefined && !(Number.isInteger(probes) && probes >= 0 && probes <= 100_000))
    throw new UsageError(`--probes must be an integer from 0 to 100000 (got ${values.probes})`);
  const manager = await openManager();
  let result;
  try {
    ({ result } = await untilInterrupted(manager, (signal, started) =>
      runFit(manager, input, {
        param,
        max,
        probes,
        signal,
        onBound: (b) => {
          if (!values.quiet)
            io.err(
              `bound ${param} ${b.value}: allocated peak ${formatBytes(b.allocated)} ${b.allocated <= b.limit ? 'within' : 'over'} the ${formatBytes(b.limit)} limit\n`,
            );
        },
        onRunStarted: (r) => started(r.runId),
        onProbe: (p, done, bound) => {
          if (!values.quiet)
            io.err(
              `fit  ${param} ${p.value}: ${p.ok ? 'fits' : 'out of memory'}  peak ${formatBytes(p.peak_allocated)}  (probe ${done} of at most ${bound})\n`,
            );
        },
      }),
    ));
  } catch (err) {
    if (err instanceof FitCancelled) {
      io.err('fit cancelled\n');
      return 130;
    }
    throw err;
  }
  if (values.json) io.out(JSON.stringify(result) + '\n');
  else {
    io.out(
      table(
        [param, 'fits', 'peak allocated', 'peak reserved', '+ CUDA context', 'run'],
        result.probes.map((p) => [
          String(p.value),
          p.ok ? 'yes' : 'no',
          formatBytes(p.peak_allocated),
          formatBytes(p.peak_reserved),
          formatBytes(p.peak_reserved + result.context + (p.nccl ?? 0)),
          p.runId,
        ]),
      ),
    );
    const where = spec.capacity !== null ? `under the ${formatBytes(result.capacity)} cap on ${spec.device}` : `on ${spec.device}`;
    io.out(
      param === 'world'
        ? result.value
          ? `\nsmallest world that fits ${where}: ${result.value} GPUs\n`
          : `\nno world up to ${max ?? 'the limit'} fits ${where}\n`
        : `\nlargest ${param} that fits ${where}: ${result.value}\n`,
    );
    const best = result.probes.find((p) => p.ok && p.value === result.value);
    // NCCL's buffers are on the card beside the context, as in sweep's column and the run's line.
    if (best) io.out(`  ${wholeCard(best.peak_reserved, { ...result, nccl: best.nccl ?? 0 })}\n`);
    // Under a cap "fits" need not be monotone: what was probed above the answer and below it.
    const answer = fitAnswer(result);
    if (answer) io.out(`  ${answer}\n`);
    if (result.unexplored?.length) io.out(`  (--probes N probes more of them: ${result.probes.length} probes ran)\n`);
    if (result.context > 0)
      io.out(`  (the CUDA context & libraries, ${formatBytes(result.context)}, are counted: PyTorch does not see them)\n`);
  }
  return 0;
};

export default fit;

// `vramlab run` of a data-parallel spec on cuda:N (or a sim: device with --launch): the job
// runs for real, one rank process per GPU (runner/dist_job.ts), instead of simulated. The
// contract refuses `parallel` on a cuda: device (the app simulates ranks); here the rest of
// the spec is validated on the simulated twin's device and the job launched on the GPUs.
import path from 'node:path';
import { loadAddon } from '../addon/load';
import { projectRoot } from '../paths';
import { parseSpec, engineSpec, SpecError, type Spec, type SpecInput } from '../contract/spec';
import { launchRanks, type LaunchOutcome } from '../runner/dist_job';
import { formatBytes, table } from './format';
import { UsageError, type CliIO } from './io';
import { specUsage } from './support';

/** Whether the spec asks for a launched job: `parallel` on a cuda: device, or --launch. */
export function wantsLaunch(input: SpecInput, launch: boolean): boolean {
  const device = typeof input.device === 'string' ? input.device : '';
  return !!input.parallel && (launch || device.startsWith('cuda:'));
}

/** The validated spec of a launched job (its device as given). */
export function launchSpec(input: SpecInput): Spec {
  const device = String(input.device ?? '');
  const onGpu = device.startsWith('cuda:');
  try {
    const spec = parseSpec(onGpu ? { ...input, device: 'sim:h100-80gb' } : input);
    if (onGpu && device !== 'cuda:0') throw new UsageError(`a launched job starts at cuda:0 (rank r on cuda:r), not ${device}`);
    return onGpu ? { ...spec, device } : spec;
  } catch (err) {
    if (err instanceof SpecError) specUsage(err);
    throw err;
  }
}

export async function runLaunched(spec: Spec, json: boolean, io: CliIO, timeoutMs = 3_600_000): Promise<number> {
  const world = spec.parallel?.world ?? 1;
  if (spec.device.startsWith('cuda:')) {
    const gpus = loadAddon()
      .listDevices()
      .filter((d) => d.kind === 'cuda').length;
    if (world > gpus)
      throw new UsageError(
        `parallel.world ${world} runs one rank per GPU: ${world} GPUs needed, ${gpus} visible` +
          (gpus ? ` (cuda:0..cuda:${gpus - 1})` : ''),
      );
  }
  // the CLI again (bin/vramlab.js, whoever called this), as `vramlab __rank DIR RANK`, once per rank
  const out: LaunchOutcome = await launchRanks(engineSpec(spec), world, {
    command: process.execPath,
    args: [path.join(projectRoot(), 'bin', 'vramlab.js')],
    timeoutMs,
  });
  if (out.error) {
    io.err(`vramlab run: ${out.error}\n`);
    return 1;
  }
  const ranks = out.ranks;
  if (json) {
    io.out(
      JSON.stringify({
        status: 'done',
        launched: true,
        device: spec.device,
        readings: ranks[0]?.readings ?? {},
        ranks: ranks.map((r) => r.readings),
        rank_class: ranks.map((r) => r.rank),
        rank_devices: ranks.map((r) => r.device),
        losses: ranks.map((r) => r.losses),
        params_fingerprint: ranks.map((r) => r.params_fingerprint),
        collectives: ranks.map((r) => r.collectives),
        nccl_footprint: ranks.map((r) => r.nccl),
        spec,
      }) + '\n',
    );
    return 0;
  }
  const keys = Object.keys(ranks[0]?.readings ?? {});
  io.out(`${spec.parallel?.kind} on ${ranks.map((r) => r.device).join(', ')}, one process per rank\n\n`);
  io.out(
    table(
      ['reading', ...ranks.map((r) => `rank ${r.rank}`)],
      keys.map((k) => [k, ...ranks.map((r) => formatBytes(r.readings[k] ?? 0))]),
    ) + '\n',
  );
  if (ranks.some((r) => r.losses.length))
    io.out(`\nlosses: ${ranks.map((r) => `rank ${r.rank} ${r.losses.map((l) => l.toPrecision(9)).join(' ')}`).join('; ')}\n`);
  return 0;
}

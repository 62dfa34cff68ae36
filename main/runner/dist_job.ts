// A data-parallel job for real: one process per rank, as torchrun starts PyTorch's. Each
// rank process runs the addon's runRank (native/runner/dist_launch.h): rank 0 makes the
// group id and publishes it in the job's private directory, every rank runs the spec on
// cuda:<rank> through NCCL (a sim: device: the same processes with a group that only
// counts) and writes rank<r>.json there. A rank that fails ends the job: the others may
// wait in a collective forever, so they are killed after a grace period.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export interface RankResult {
  rank: number;
  device: string;
  device_name: string | null;
  /** bytes over the baseline, by reading */
  readings: Record<string, number>;
  /** each micro-batch's loss as the device computed it (empty on a sim: device) */
  losses: number[];
  /** FNV-1a of the final parameters' bytes (0000000000000000 on a sim: device) */
  params_fingerprint: string;
  collectives: Record<string, number>;
  /** NCCL's footprint: cudaMemGetInfo around the communicator and its first collectives */
  nccl: Record<string, number> | null;
}

export interface LaunchOptions {
  /** the program and the arguments before `__rank DIR RANK` (this CLI) */
  command: string;
  args: string[];
  timeoutMs: number;
  graceMs?: number;
}

export interface LaunchOutcome {
  ranks: RankResult[];
  /** null when every rank exited 0 with its result; else the first rank's reason */
  error: string | null;
}

function readRank(file: string, r: number): { result?: RankResult; error?: string } {
  let raw: Record<string, unknown>;
  try {
    raw = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
  } catch {
    return { error: `rank ${r} wrote no result` };
  }
  if (typeof raw.error === 'string') return { error: `rank ${r}: ${raw.error}` };
  const readings: Record<string, number> = {};
  for (const [k, v] of (raw.readings as [string, number][]) ?? []) readings[k] = v;
  return {
    result: {
      rank: r,
      device: String(raw.device),
      device_name: typeof raw.device_name === 'string' ? raw.device_name : null,
      readings,
      losses: (raw.losses as number[]) ?? [],
      params_fingerprint: String(raw.params_fingerprint ?? ''),
      collectives: (raw.collectives as Record<string, number>) ?? {},
      nccl: (raw.nccl as Record<string, number>) ?? null,
    },
  };
}

/** Starts `world` rank processes for the engine spec and waits for them all. */
export async function launchRanks(spec: unknown, world: number, o: LaunchOptions): Promise<LaunchOutcome> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'vramlab-dist-'));
  try {
    writeFileSync(path.join(dir, 'spec.json'), JSON.stringify(spec));
    const children = Array.from({ length: world }, (_, r) =>
      spawn(o.command, [...o.args, '__rank', dir, String(r)], { stdio: ['ignore', 'ignore', 'pipe'] }),
    );
    const stderr = children.map(() => '');
    let exitError: string | null = null;
    let killTimer: NodeJS.Timeout | undefined;
    const killAll = () => children.forEach((c) => c.exitCode === null && c.signalCode === null && c.kill('SIGKILL'));
    const deadline = setTimeout(() => {
      exitError ??= 'the job ran past its timeout';
      killAll();
    }, o.timeoutMs);
    await Promise.all(
      children.map(
        (c, r) =>
          new Promise<void>((resolve) => {
            c.stderr?.on('data', (d: Buffer) => (stderr[r] = (stderr[r] + d.toString()).slice(-2000)));
            c.on('error', (err) => {
              exitError ??= `rank ${r} could not start: ${err.message}`;
              resolve();
            });
            c.on('exit', (code, signal) => {
              if (code !== 0 && !exitError) {
                exitError = `rank ${r} exited with ${signal ?? `status ${code}`}${stderr[r] ? `: ${stderr[r].trim()}` : ''}`;
                killTimer = setTimeout(killAll, o.graceMs ?? 10_000);
              }
              resolve();
            });
          }),
      ),
    );
    clearTimeout(deadline);
    clearTimeout(killTimer);
    const ranks: RankResult[] = [];
    let error: string | null = null;
    for (let r = 0; r < world; r++) {
      const got = readRank(path.join(dir, `rank${r}.json`), r);
      if (got.result) ranks.push(got.result);
      else error ??= got.error ?? null;
    }
    // a rank's own reason first; else how a process ended
    return { ranks, error: error ?? exitError };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

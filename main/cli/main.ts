// `vramlab <command> ...`: dispatches to one file per command.
import { processIO, terminalSafeIO, UsageError, type CliIO, type Command } from './io';
import devices from './commands/devices';
import serve from './commands/serve';
import replay from './commands/replay';
import snapshot from './commands/snapshot';
import run from './commands/run';
import sweep from './commands/sweep';
import fit from './commands/fit';
import fixes from './commands/fixes';
import remedies from './commands/remedies';
import runs from './commands/runs';
import rank from './commands/rank';
import { clipText, quote } from '../contract/echo';

/** Characters of one error message printed (a spec's eight issues fit in a few hundred). */
const MAX_MESSAGE = 8192;

export const commands: Record<string, { run: Command; summary: string }> = {
  devices: { run: devices, summary: 'list simulated presets and CUDA GPUs' },
  serve: { run: serve, summary: 'serve the lab to a browser on 127.0.0.1 (token in the URL)' },
  replay: { run: replay, summary: 'what-if replay of a PyTorch memory snapshot under other settings/capacities' },
  snapshot: { run: snapshot, summary: 'inspect a PyTorch memory snapshot, or export a run/replay as one' },
  run: { run, summary: 'run an experiment spec (JSON) and keep it in the run store' },
  sweep: { run: sweep, summary: 'run a spec once per value of one parameter' },
  fit: { run: fit, summary: 'find the largest batch size that fits on the device' },
  remedies: { run: remedies, summary: 'does it fit, and which simulated changes make it fit (cheapest first)' },
  fixes: { run: fixes, summary: 'compare the usual fixes for varying sequence lengths (reserved creep, late OOM)' },
  runs: { run: runs, summary: 'list, show, export, rename, delete and compare stored runs' },
};

export function usage(): string {
  const rows = Object.entries(commands).map(([name, c]) => `  ${name.padEnd(10)} ${c.summary}`);
  return `usage: vramlab <command> [options]\n\ncommands:\n${rows.join('\n')}\n\n'vramlab <command> --help' for a command's options.\n`;
}

export async function main(argv: string[], io: CliIO = processIO): Promise<number> {
  const [name, ...rest] = argv;
  if (!name || name === '--help' || name === '-h' || name === 'help') {
    io.out(usage());
    return name ? 0 : 2;
  }
  // one rank of a job `vramlab run` launched (not listed: started by the CLI itself)
  const cmd = name === '__rank' ? { run: rank, summary: '' } : commands[name];
  if (!cmd) {
    io.err(`vramlab: unknown command ${quote(name, 40)}\n\n${usage()}`);
    return 2;
  }
  // Commands that print what a snapshot holds: no control sequence from the file reaches
  // the terminal, whichever table or message carries it (file names included).
  if (name === 'snapshot' || name === 'replay') io = terminalSafeIO(io);
  try {
    return await cmd.run(rest, io);
  } catch (err) {
    // Whatever a message quotes, it stays a message: a few lines, never the input it echoes.
    const message = clipText(err instanceof Error ? err.message : String(err), MAX_MESSAGE);
    io.err(`vramlab ${name}: ${message}\n`);
    return err instanceof UsageError ? 2 : 1;
  }
}

// A CLI io that captures what a command prints.
import type { CliIO } from '../../main/cli/io';
import { main } from '../../main/cli/main';

export function captureIO(): CliIO & { stdout: () => string; stderr: () => string } {
  let out = '';
  let err = '';
  return {
    out: (t) => void (out += t),
    err: (t) => void (err += t),
    stdout: () => out,
    stderr: () => err,
  };
}

/** Runs the CLI in this process with a captured io: its exit code and what it printed. */
export async function runCli(args: string[]): Promise<{ code: number; out: string; err: string }> {
  const io = captureIO();
  const code = await main(args, io);
  return { code, out: io.stdout(), err: io.stderr() };
}

// What a CLI command may touch: its streams (so tests can capture them) and its exit code.
import { printableText } from '../snapshot/printable';

export interface CliIO {
  out: (text: string) => void;
  err: (text: string) => void;
}

export const processIO: CliIO = {
  out: (t) => process.stdout.write(t),
  err: (t) => process.stderr.write(t),
};

/** Streams whose text has every control character but newline and tab replaced (printable.ts). */
export function terminalSafeIO(io: CliIO): CliIO {
  return { out: (t) => io.out(printableText(t)), err: (t) => io.err(printableText(t)) };
}

/** Thrown for bad usage; main prints the message and exits 2. */
export class UsageError extends Error {}

export type Command = (args: string[], io: CliIO) => Promise<number>;

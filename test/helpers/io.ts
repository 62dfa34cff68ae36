// A CLI io that captures what a command prints.
import type { CliIO } from '../../main/cli/io';

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

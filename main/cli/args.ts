// Thin wrapper over node:util parseArgs that turns its errors into usage errors.
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { UsageError } from './io';

export function parse<T extends NonNullable<ParseArgsConfig['options']>>(args: string[], options: T, allowPositionals = false) {
  try {
    return parseArgs({ args, options, allowPositionals, strict: true });
  } catch (err) {
    throw new UsageError(err instanceof Error ? err.message : String(err));
  }
}

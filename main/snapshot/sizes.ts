// Byte sizes as people type them, for the CLI and host: the experiment spec's parser
// ("24GiB" binary, "24GB" decimal, "512MiB", plain bytes), throwing a clear error instead of null.
import { parseSize as parseSizeOrNull } from '../contract/spec';

const UNITS_HELP = 'B, KB, MB, GB, TB, KiB, MiB, GiB or TiB';

export function parseSize(text: string): number {
  const value = parseSizeOrNull(text);
  if (value === null) {
    const unit = /^\s*\d+(?:\.\d+)?\s*([A-Za-z]+)\s*$/.exec(text)?.[1];
    throw new Error(
      unit
        ? `bad size "${text}": unknown unit "${unit}" (use ${UNITS_HELP})`
        : `bad size "${text}": expected a number with an optional unit (${UNITS_HELP})`,
    );
  }
  const bytes = Math.floor(value);
  if (!Number.isSafeInteger(bytes)) throw new Error(`bad size "${text}": too large`);
  return bytes;
}

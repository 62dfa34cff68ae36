// Small text helpers for the snapshot screens.

/** A duration given in microseconds, in the largest unit that keeps it readable. */
export function formatDuration(us: number): string {
  if (us < 1000) return `${us.toFixed(0)} µs`;
  if (us < 1e6) return `${(us / 1000).toFixed(1)} ms`;
  if (us < 60e6) return `${(us / 1e6).toFixed(2)} s`;
  return `${Math.floor(us / 60e6)} min ${((us % 60e6) / 1e6).toFixed(0)} s`;
}

/** "event 123" or "before the trace" for -1. */
export function eventLabel(i: number | null): string {
  if (i === null) return 'still alive at the end';
  return i < 0 ? 'before the trace' : `event ${i}`;
}

/** The most telling part of a frame: the function after the last ':' of file:line:name. */
export function frameShort(f: string): string {
  const m = /^(.*?):(\d+):(.*)$/.exec(f);
  if (!m) return f;
  const file = m[1].split('/').pop();
  return `${m[3]} (${file}:${m[2]})`;
}

/** A capacity's label: "device memory" when none is set. */
export function capacityLabel(c: number | null, fmt: (n: number) => string): string {
  return c === null ? 'whole device' : fmt(c);
}

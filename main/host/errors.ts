/** A readable one-line message for anything thrown (native errors arrive as Error). */
export function describeError(err: unknown): string {
  if (err instanceof Error) return err.message || err.name;
  if (typeof err === 'string') return err;
  try {
    return JSON.stringify(err);
  } catch {
    return String(err);
  }
}

/** The server is at its bound on work: answered with the contract's `unavailable` code. */
export class UnavailableError extends Error {
  readonly code = 'unavailable';
}

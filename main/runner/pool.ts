// A bounded pool for the probes of a sweep, fit or fixes: each native run already has its
// own thread, so a few at once use the cores while the event loop only drains them.
// Results come back in the items' order whatever order they finish in; once `stop` says
// so (cancel) or a probe throws, nothing new starts and the pool waits for those running.
import os from 'node:os';

/** Probes at once by default: the cores less one for the event loop, but at least 2 where
 *  there are 2 cores (the event loop mostly waits: an 8-probe sweep on 2 cores took 1/1.3
 *  the time with 2 at once as with 1), at most 4. */
export const DEFAULT_PARALLEL = defaultParallel(os.availableParallelism());

export function defaultParallel(cores: number): number {
  return Math.max(Math.min(cores, 2), Math.min(cores - 1, 4), 1);
}

export interface PoolOptions<R> {
  /** Most items running at once (default DEFAULT_PARALLEL). */
  limit?: number;
  /** Checked before each item starts: true stops the pool (items already running finish). */
  stop?: () => boolean;
  /** Each result as it arrives (in finishing order); `done` counts finished items. */
  onResult?: (result: R, index: number, done: number) => void;
}

/**
 * Runs `work` over `items`, at most `limit` at once, starting them in order. Resolves with
 * the results by index (undefined for items never started); rejects with the first error
 * once every started item has settled.
 */
export async function runPool<T, R>(
  items: readonly T[],
  work: (item: T, index: number) => Promise<R>,
  opts: PoolOptions<R> = {},
): Promise<Array<R | undefined>> {
  const limit = Math.max(1, Math.floor(opts.limit ?? DEFAULT_PARALLEL));
  const results: Array<R | undefined> = new Array(items.length).fill(undefined);
  let next = 0;
  let done = 0;
  let failed = false;
  let firstError: unknown;
  const lane = async (): Promise<void> => {
    while (next < items.length && !failed && !opts.stop?.()) {
      const i = next++;
      try {
        const r = await work(items[i], i);
        results[i] = r;
        done++;
        opts.onResult?.(r, i, done);
      } catch (err) {
        if (!failed) firstError = err;
        failed = true;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
  if (failed) throw firstError;
  return results;
}

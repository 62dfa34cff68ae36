// The probe pool of sweeps, fit and fixes (main/runner/pool.ts): at most `limit` at once,
// results by index whatever order they finish in, a stop that lets nothing new start, and
// the first error reported once every started item has settled.
import { describe, expect, it } from 'vitest';
import { defaultParallel, runPool } from '../../main/runner/pool';

/** A promise settled from outside, so the test chooses the finishing order. */
function gate<T>() {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => ((resolve = res), (reject = rej)));
  return { promise, resolve, reject };
}
const turn = () => new Promise((r) => setImmediate(r));

describe('runPool', () => {
  it('runs at most `limit` at once, starts in order and returns results by index', async () => {
    const gates = Array.from({ length: 6 }, () => gate<string>());
    const started: number[] = [];
    let running = 0;
    let most = 0;
    const finished: number[] = [];
    const p = runPool(
      gates,
      async (g, i) => {
        started.push(i);
        most = Math.max(most, ++running);
        try {
          return await g.promise;
        } finally {
          running--;
        }
      },
      { limit: 3, onResult: (_r, i) => finished.push(i) },
    );
    await turn();
    expect(started).toEqual([0, 1, 2]);
    // Finish out of order: the last started first.
    for (const i of [2, 0, 1, 5, 3, 4]) {
      gates[i].resolve(`r${i}`);
      await turn();
    }
    expect(await p).toEqual(['r0', 'r1', 'r2', 'r3', 'r4', 'r5']);
    expect(started).toEqual([0, 1, 2, 3, 4, 5]);
    expect(most).toBe(3);
    expect(finished.slice(0, 3)).toEqual([2, 0, 1]);
  });

  it('starts nothing new once stopped, lets the running ones finish, and leaves the rest unset', async () => {
    const gates = Array.from({ length: 5 }, () => gate<number>());
    let stopped = false;
    const started: number[] = [];
    const p = runPool(
      gates,
      (g, i) => {
        started.push(i);
        return g.promise;
      },
      { limit: 2, stop: () => stopped },
    );
    await turn();
    stopped = true; // cancel while items 0 and 1 run
    gates[1].resolve(1);
    gates[0].resolve(0);
    expect(await p).toEqual([0, 1, undefined, undefined, undefined]);
    expect(started).toEqual([0, 1]);
  });

  it('rejects with the first error after the others settle, starting nothing after it', async () => {
    const gates = Array.from({ length: 4 }, () => gate<number>());
    const started: number[] = [];
    let settled = 0;
    const p = runPool(
      gates,
      async (g, i) => {
        started.push(i);
        try {
          return await g.promise;
        } finally {
          settled++;
        }
      },
      { limit: 2 },
    );
    await turn();
    gates[0].reject(new Error('probe 0 failed'));
    await turn();
    gates[1].reject(new Error('probe 1 failed too'));
    await expect(p).rejects.toThrow('probe 0 failed');
    expect(started).toEqual([0, 1]);
    expect(settled).toBe(2);
  });

  it('with limit 1 runs one item after another, like a loop', async () => {
    const order: string[] = [];
    const out = await runPool(
      [1, 2, 3],
      async (x) => {
        order.push(`start ${x}`);
        await turn();
        order.push(`end ${x}`);
        return x * 10;
      },
      { limit: 1 },
    );
    expect(out).toEqual([10, 20, 30]);
    expect(order).toEqual(['start 1', 'end 1', 'start 2', 'end 2', 'start 3', 'end 3']);
  });
});

describe('the default number of probes at once', () => {
  it('is the cores less one, but 2 on a 2-core machine, and never more than 4', () => {
    expect([1, 2, 3, 4, 5, 8, 64].map(defaultParallel)).toEqual([1, 2, 2, 3, 4, 4, 4]);
  });
});

// A server-wide bound on work: at most `limit` jobs hold a slot at once (each native run or
// prediction holds hundreds of MB while it goes); up to `maxWaiting` more wait in order,
// and beyond that a request is refused as busy (the contract's `unavailable`).
import { UnavailableError } from '../host/errors';

export class CancelledError extends Error {
  constructor(message = 'cancelled before it started') {
    super(message);
  }
}

interface Waiter {
  grant: (release: () => void) => void;
}

export class WorkSlots {
  private running = 0;
  private readonly waiting: Waiter[] = [];

  constructor(
    readonly what: string,
    readonly limit: number,
    readonly maxWaiting: number,
  ) {}

  get active(): number {
    return this.running;
  }

  get queued(): number {
    return this.waiting.length;
  }

  /** Resolves with the release once a slot is free; rejects busy, or when `signal` aborts first. */
  acquire(signal?: AbortSignal): Promise<() => void> {
    if (signal?.aborted) return Promise.reject(new CancelledError());
    if (this.running < this.limit) return Promise.resolve(this.grant());
    if (this.waiting.length >= this.maxWaiting)
      return Promise.reject(
        new UnavailableError(
          `busy: ${this.running} ${this.what} running and ${this.waiting.length} waiting on this server (at most ${this.limit} at once); try again shortly`,
        ),
      );
    return new Promise((resolve, reject) => {
      const w: Waiter = {
        grant: (release) => {
          signal?.removeEventListener('abort', onAbort);
          resolve(release);
        },
      };
      const onAbort = () => {
        const i = this.waiting.indexOf(w);
        if (i >= 0) this.waiting.splice(i, 1);
        reject(new CancelledError());
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiting.push(w);
    });
  }

  private grant(): () => void {
    this.running++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.running--;
      const next = this.waiting.shift();
      if (next) next.grant(this.grant());
    };
  }
}

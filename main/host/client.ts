// One client of the host: a WebSocket connection or an Electron window. Run events go to
// the clients subscribed to the run (the one that started it, or that asked), and the work
// a client started is cancelled when it goes (closing its hooks).
export class Client {
  private readonly hooks = new Set<() => void>();
  private readonly aborter = new AbortController();

  constructor(
    readonly id: string,
    readonly transport: 'ipc' | 'websocket',
  ) {}

  get closed(): boolean {
    return this.aborter.signal.aborted;
  }

  /** Aborted when the client goes: work waiting for a slot stops waiting. */
  get signal(): AbortSignal {
    return this.aborter.signal;
  }

  /** Runs `fn` when the client goes (at once if it has gone); returns the unregister. */
  onClose(fn: () => void): () => void {
    if (this.closed) {
      fn();
      return () => {};
    }
    this.hooks.add(fn);
    return () => this.hooks.delete(fn);
  }

  close(): void {
    if (this.closed) return;
    this.aborter.abort(new Error('the client went away'));
    for (const fn of [...this.hooks]) {
      try {
        fn();
      } catch {
        /* one hook's failure must not keep the others from cancelling their work */
      }
    }
    this.hooks.clear();
  }
}

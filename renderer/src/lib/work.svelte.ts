// A sweep, fit or fixes followed while it runs: the host sends `work.progress` as each of its
// runs ends (n of N, and that run's row), and work.cancel stops it. One instance per start.
import type { WorkProgress } from '$contract/runs';
import type { Transport } from '../transport/transport';
import { api } from './api';

let counter = 0;

export class WorkWatch<Row> {
  readonly id = `w${Date.now().toString(36)}-${++counter}`;
  done = $state(0);
  total = $state(0);
  /** The rows of the runs that ended so far, in the order they ended. */
  rows = $state.raw<Row[]>([]);
  cancelling = $state(false);
  private off: (() => void) | null;

  constructor(private readonly transport: Transport) {
    this.off = transport.onEvent((msg) => {
      if (msg.event !== 'work.progress') return;
      const p = msg.data as WorkProgress;
      if (p.workId !== this.id) return;
      this.done = p.done;
      this.total = p.total;
      this.rows = [...this.rows, p.row as Row];
    });
  }

  async cancel(): Promise<void> {
    this.cancelling = true;
    await api.cancelWork(this.transport, this.id);
  }

  /** Stops listening (the start call has answered). */
  close(): void {
    this.off?.();
    this.off = null;
  }
}

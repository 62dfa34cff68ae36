// The panel's live prediction: the spec simulated on the host (run.predict) a moment after
// the user stops typing. Requests are debounced; an answer to anything but the latest
// request is dropped, and the host cancels the superseded simulation itself.
import type { Prediction } from '$contract/runs';
import type { SpecInput } from '$contract/spec';

export type PredictFn = (spec: SpecInput) => Promise<Prediction>;

export class LivePrediction {
  result = $state<Prediction | null>(null);
  error = $state<string | null>(null);
  pending = $state(false);
  private seq = 0;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private lastKey = '';

  constructor(
    private readonly predict: PredictFn,
    private readonly delayMs = 250,
  ) {}

  /** A new spec to predict (null: the form has errors, so nothing to show). */
  request(spec: SpecInput | null): void {
    const key = spec ? JSON.stringify(spec) : '';
    if (key === this.lastKey) return;
    this.lastKey = key;
    if (this.timer) clearTimeout(this.timer);
    const my = ++this.seq;
    if (!spec) {
      this.result = null;
      this.pending = false;
      return;
    }
    this.pending = true;
    this.timer = setTimeout(() => void this.run(spec, my), this.delayMs);
  }

  private async run(spec: SpecInput, my: number): Promise<void> {
    try {
      const r = await this.predict(spec);
      if (my !== this.seq || r.status === 'cancelled') return;
      this.result = r;
      this.error = null;
    } catch (e) {
      if (my === this.seq) this.error = e instanceof Error ? e.message : String(e);
    } finally {
      if (my === this.seq) this.pending = false;
    }
  }

  dispose(): void {
    if (this.timer) clearTimeout(this.timer);
    this.seq++;
  }
}

// Which phase each memory sample falls in, from the phase markers around it.
import type { MemorySample, PhaseMarker, RunEvent } from './runs';

/** Markers that frame other phases rather than name what the run is doing. */
const FRAMES = new Set(['iteration', 'microbatch', 'micro_batch', 'module', 'run']);

export interface PhaseAt {
  phase: string; // innermost open phase ("forward", ...), else the frame ("microbatch", "iteration"), "" outside all
  iteration: number;
  micro_batch: number;
  module: string;
}

/** Walks samples and markers together (both in time order); a marker at time t applies to samples at t. */
export function annotate(samples: readonly MemorySample[], events: readonly RunEvent[]): PhaseAt[] {
  const markers = events.filter((e): e is { type: 'phase' } & PhaseMarker => e.type === 'phase');
  const tracker = new PhaseTracker();
  const out: PhaseAt[] = [];
  let m = 0;
  for (const s of samples) {
    while (m < markers.length && markers[m].t <= s.t) tracker.apply(markers[m++]);
    out.push(tracker.current());
  }
  return out;
}

export class PhaseTracker {
  private stack: PhaseMarker[] = [];
  private iteration = -1;
  private micro = -1;

  apply(p: PhaseMarker): void {
    if (p.edge === 'begin') {
      this.stack.push(p);
      if (p.iteration >= 0) this.iteration = p.iteration;
      if (p.micro_batch >= 0) this.micro = p.micro_batch;
      return;
    }
    // Close the innermost matching begin (tolerates a missing end for inner phases).
    for (let i = this.stack.length - 1; i >= 0; i--) {
      if (this.stack[i].name === p.name && (p.name !== 'module' || this.stack[i].module === p.module)) {
        this.stack.length = i;
        break;
      }
    }
    if (p.name === 'microbatch' || p.name === 'micro_batch') this.micro = -1;
  }

  current(): PhaseAt {
    let phase = '';
    let frame = '';
    let module = '';
    for (let i = this.stack.length - 1; i >= 0; i--) {
      const p = this.stack[i];
      if (!module && p.name === 'module') module = p.module;
      if (!frame && p.name !== 'module' && FRAMES.has(p.name)) frame = p.name === 'micro_batch' ? 'microbatch' : p.name;
      if (!phase && !FRAMES.has(p.name)) phase = p.name;
    }
    // Between work phases inside an iteration (the loss, say), name the frame instead.
    return { phase: phase || frame, iteration: this.iteration, micro_batch: this.micro, module };
  }
}

// Stack traces sent once per reply and referenced by index: real snapshots share one
// frames list between many events, so the table stays small.
import { topFrames } from '../snapshot/frames';
import type { Frames } from '../snapshot/model';

/** Frames longer than this are cut (C++ template names run to thousands of characters). */
const MAX_FRAME_CHARS = 240;

export function cutFrame(f: string): string {
  return f.length > MAX_FRAME_CHARS ? `${f.slice(0, MAX_FRAME_CHARS - 1)}…` : f;
}

export function shortFrames(frames: Frames, n = 5): string[] {
  return topFrames(frames, n).map(cutFrame);
}

export class StackTable {
  readonly stacks: string[][] = [];
  private readonly byFrames = new Map<Frames, number>();
  private readonly byText = new Map<string, number>();

  constructor(private readonly depth = 5) {}

  ref(frames: Frames): number {
    const known = this.byFrames.get(frames);
    if (known !== undefined) return known;
    const text = shortFrames(frames, this.depth);
    const key = text.join('\n');
    let i = this.byText.get(key);
    if (i === undefined) {
      i = this.stacks.length;
      this.stacks.push(text);
      this.byText.set(key, i);
    }
    this.byFrames.set(frames, i);
    return i;
  }
}

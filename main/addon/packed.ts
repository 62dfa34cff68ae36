// The run handle's drain, unpacked: the addon hands each drain over as two Float64Arrays
// and the strings they use (native/addon/runner_binding.cpp, batchToJs), because building
// every event as an object through Node-API cost more than the run itself; objects are
// made here in JS, where they are cheap. The result is the NativeEventBatch callers know.
import type { MemorySample } from '../contract/runs';
import type { NativeEventBatch, NativeOutcome, NativeRunEvent, NativeRunHandle } from './types';

/** What drainPacked() returns (the layouts are runner_binding.cpp's). */
export interface PackedBatch {
  samples: Float64Array;
  events: Float64Array;
  strings: string[];
  dropped: number;
  outcome: NativeOutcome | null;
}

export interface RawRunHandle {
  cancel(): void;
  drainPacked(): PackedBatch;
}

type NativeAlloc = Extract<NativeRunEvent, { type: 'alloc' }>;

/** t, allocated, reserved, active, requested, then bytes per category. */
const SAMPLE_HEAD = 5;
/** kind, t, then seven fields whose meaning depends on the kind. */
export const EVENT_WIDTH = 9;

export function unpackBatch(p: PackedBatch, categories: number): NativeEventBatch {
  const width = SAMPLE_HEAD + categories;
  const s = p.samples;
  if (s.length % width !== 0)
    throw new Error(`addon: a drain's samples are not rows of ${width} (the addon and main/contract/runs.ts disagree)`);
  const samples: MemorySample[] = new Array(s.length / width);
  for (let i = 0, o = 0; o < s.length; i++, o += width) {
    const by = new Array<number>(categories);
    for (let c = 0; c < categories; c++) by[c] = s[o + SAMPLE_HEAD + c];
    samples[i] = { t: s[o], allocated: s[o + 1], reserved: s[o + 2], active: s[o + 3], requested: s[o + 4], by };
  }
  const e = p.events;
  const str = p.strings;
  const events: NativeRunEvent[] = new Array(e.length / EVENT_WIDTH);
  for (let i = 0, o = 0; o < e.length; i++, o += EVENT_WIDTH) {
    // Keys in the order the addon set them before (stored runs and exports keep their shape).
    if (e[o] === 0)
      events[i] = {
        type: 'phase',
        t: e[o + 1],
        edge: e[o + 2] ? 'begin' : 'end',
        name: str[e[o + 5]],
        iteration: e[o + 3],
        micro_batch: e[o + 4],
        module: str[e[o + 6]],
      };
    else {
      const t = e[o + 1];
      const action = str[e[o + 2]];
      const addr = e[o + 3];
      const size = e[o + 4];
      const blockSize = e[o + 5];
      const category = e[o + 6];
      const module = str[e[o + 7]];
      const a: NativeAlloc =
        blockSize > 0
          ? { type: 'alloc', t, action, addr, size, blockSize, category, module }
          : { type: 'alloc', t, action, addr, size, category, module };
      const op = str[e[o + 8]];
      if (op) a.op = op;
      events[i] = a;
    }
  }
  return { samples, events, dropped: p.dropped, outcome: p.outcome };
}

/** The handle callers use: drain() unpacks. */
export function unpackingHandle(raw: RawRunHandle, categories: number): NativeRunHandle {
  return {
    cancel: () => raw.cancel(),
    drain: () => unpackBatch(raw.drainPacked(), categories),
  };
}

// Opening a snapshot without holding it twice: the pickle is read (from a file in chunks,
// or a buffer in place) and every trace event is converted the moment its batch is read,
// then dropped from the reader: events live only in typed arrays (compact_trace.ts), so a
// 5-million-event snapshot opens in a few hundred MB instead of the many GB its decoded
// dicts would take. The pickle reader stays the judge of what is valid (ReadHooks).
import { statSync } from 'node:fs';
import { addressedActionCode, CompactTraceBuilder } from './compact_trace';
import { Converter, event, snapshotFromPickle, type AddressReader, type StreamedTraces } from './from_pickle';
import type { Frames, Snapshot } from './model';
import {
  readPickle,
  readPickleFile,
  readPickleSliced,
  type HookContext,
  type ReadHooks,
  type ReadOptions,
  type SliceOptions,
} from './pickle/reader';
import type { TraceSink, TraceStack } from './pickle/trace_fast';
import { PyTuple, type PickleValue } from './pickle/values';

export interface LoadProgress {
  /** Bytes of the pickle read so far, and in all. */
  bytes: number;
  total: number;
  /** Trace events converted so far. */
  events: number;
  /** Of those, the events the reader decoded straight from their bytes (trace_fast.ts). */
  fast: number;
}

export interface LoadOptions extends ReadOptions {
  /** Called as the read advances (about every 1% of the input), and once when it is done. */
  onProgress?: (p: LoadProgress) => void;
  /** Default true. false: every event through decoded dicts (the general path; for comparison). */
  fastEvents?: boolean;
}

const isEventDict = (v: PickleValue): boolean => v instanceof Map && typeof v.get('action') === 'string';

interface Stack extends TraceStack {
  readonly frames: Frames;
}

/** Stacks as the reader's fast path sees them: converted and interned by the same Converter. */
class Stacks {
  /** The stand-in left in the memo for each stack list consumed, by its stack. */
  private readonly refs = new Map<Frames, Stack>();
  private readonly byStand = new Map<PickleValue, Stack>();
  private none: Stack | null = null;

  constructor(private readonly conv: Converter) {}

  /** The stand-in for a consumed stack list of these frames (one per distinct stack). */
  of(frames: Frames): Stack {
    let ref = this.refs.get(frames);
    if (!ref) {
      const stand = new PyTuple([]);
      this.conv.aliasFrames(stand, frames);
      ref = { frames, stand };
      this.refs.set(frames, ref);
      this.byStand.set(stand, ref);
    }
    return ref;
  }

  fromDicts(dicts: readonly PickleValue[] | null): Stack | undefined {
    if (dicts === null) return (this.none ??= { frames: this.conv.frames(null, ''), stand: null });
    try {
      return this.of(this.conv.frames(dicts as PickleValue[], 'frames'));
    } catch {
      return undefined; // not frame dicts: the general path reports it where it is
    }
  }

  fromValue(v: PickleValue): Stack | undefined {
    if (v === null) return this.fromDicts(null);
    return this.byStand.get(v);
  }
}

/** The reader's fast path writes a claimed trace list's events straight into its builder. */
function sinkFor(b: CompactTraceBuilder, stacks: Stacks, counted: () => void): TraceSink {
  return {
    actionCode: addressedActionCode,
    stack: (dicts) => stacks.fromDicts(dicts),
    stackOfValue: (v) => stacks.fromValue(v),
    push(code, hi, lo, size, time, stream, stack, cc, um) {
      b.pushRaw(code, hi, lo, size, time, stream, (stack as Stack).frames, cc, um);
      counted();
    },
  };
}

function streamingHooks(conv: Converter, options: LoadOptions) {
  const onProgress = options.onProgress;
  const builders = new Map<PickleValue[], CompactTraceBuilder>();
  const sinks = new Map<PickleValue[], TraceSink>();
  /** Memo index of each container read, until its event is converted (then dropped). */
  const memoIdx = new Map<object, number>();
  /** One small placeholder per distinct stack, left in the memo for later events that reuse it. */
  const stacks = new Stacks(conv);
  let events = 0;
  let fast = 0;
  const counted = () => {
    events++;
    fast++;
  };
  let nextReport = 0;
  // Addresses stay whole until the base is known (compact_trace.ts): the checked path hands
  // the one it read over here; the fast path's are plain numbers already.
  let whole: number | bigint = -1;
  const keepWhole: AddressReader = (v, path) => {
    whole = conv.wholeAddress(v, path);
    return 0;
  };
  const release = (ctx: HookContext, v: PickleValue, replacement?: PickleValue) => {
    if (typeof v !== 'object' || v === null) return;
    const idx = memoIdx.get(v);
    if (idx !== undefined) {
      ctx.release(v, idx, replacement);
      memoIdx.delete(v);
    }
  };
  const hooks: ReadHooks = {
    memoized: (v, idx) => {
      if (typeof v === 'object' && v !== null) memoIdx.set(v, idx);
    },
    append(list, items, ctx) {
      let b = builders.get(list);
      if (!b) {
        // A list becomes a trace when its first items are event dicts.
        if (!items.length || !items.every(isEventDict)) return items;
        b = new CompactTraceBuilder();
        builders.set(list, b);
      }
      for (const it of items) {
        const at = b.length;
        whole = -1;
        const e = event(conv, it, () => `device_traces[…][${at}]`, keepWhole);
        b.push(e, whole === -1 ? e.addr : whole);
        // Let go of the event's dict, and of its stack list (kept as a small stand-in: a
        // free event refers back to its allocation's list). drop() gives their heap cost
        // back to the reader's budget.
        ctx.drop(it);
        release(ctx, it);
        const fr = (it as Map<unknown, PickleValue>).get('frames');
        if (fr !== undefined && fr !== null) ctx.drop(fr);
        if (fr !== undefined && fr !== null && !(fr instanceof PyTuple && fr.items.length === 0)) {
          release(ctx, fr, stacks.of(e.frames).stand);
        }
      }
      events += items.length;
      if (onProgress && ctx.offset >= nextReport) {
        nextReport = ctx.offset + Math.max(1 << 20, Math.floor(ctx.length / 100));
        onProgress({ bytes: ctx.offset, total: ctx.length, events, fast });
      }
      return [];
    },
    traceSink(list) {
      if (options.fastEvents === false) return undefined;
      let sink = sinks.get(list);
      const b = builders.get(list);
      if (!sink && b) {
        sink = sinkFor(b, stacks, counted);
        sinks.set(list, sink);
      }
      return sink;
    },
  };
  const traces = (): StreamedTraces => builders;
  /** The last report: the whole input read, every event counted. */
  const done = (total: number) => onProgress?.({ bytes: total, total, events, fast });
  return { hooks, traces, done };
}

function load(read: (o: ReadOptions) => PickleValue, total: number, options: LoadOptions): Snapshot {
  const conv = new Converter();
  const s = streamingHooks(conv, options);
  // One read, whatever the addresses: the base for those above 2^53 is applied afterwards.
  const root = read({ ...options, hooks: s.hooks });
  s.done(total);
  return snapshotFromPickle(root, s.traces(), conv);
}

export function streamSnapshotFile(path: string, options: LoadOptions = {}): Snapshot {
  return load((o) => readPickleFile(path, o), statSync(path).size, options);
}

export function streamSnapshotBuffer(data: Uint8Array, options: LoadOptions = {}): Snapshot {
  return load((o) => readPickle(data, o), data.byteLength, options);
}

/** The same, yielding to the event loop between slices of the read (serve's uploads). */
export async function streamSnapshotBufferSliced(data: Uint8Array, options: LoadOptions & SliceOptions = {}): Promise<Snapshot> {
  const conv = new Converter();
  const s = streamingHooks(conv, options);
  const root = await readPickleSliced(data, { ...options, hooks: s.hooks });
  s.done(data.byteLength);
  return snapshotFromPickle(root, s.traces(), conv);
}

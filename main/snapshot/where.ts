// "Where was the memory?": live allocations at one moment (the peak, the OOM) grouped by
// the code that asked for them and ranked by bytes. The group is the innermost frame of the
// user's own code (outside site-packages and the standard library), so a Linear inside
// block 7 and one inside block 8 that share a line of the model add up; the library op
// (linear.py forward) and the user call path are kept for display.
import { printable } from './printable';
import { isPythonFrame, keepFrame } from './frames';
import type { Frame, Frames } from './model';

export interface MemorySite {
  /** The innermost user frame ("model.py:60 forward"), or the best frame there is. */
  site: string;
  /** User frames from outermost to innermost (at most 4). */
  path: string[];
  /** The innermost library frame, the op itself ("linear.py:134 forward"). */
  op: string | null;
  bytes: number;
  count: number;
}

export interface WhereMemoryWas {
  /** Bytes requested by every live allocation. */
  total: number;
  allocations: number;
  sites: MemorySite[];
}

const LIBRARY = /site-packages|dist-packages|\/lib\/python\d|\/torch\/|<frozen /;
const NO_STACK = '(no stack recorded)';
const BEFORE_TRACE = '(allocated before the trace began: no stack recorded)';

const short = (f: Frame) =>
  printable(`${f.filename.split('/').pop()}:${f.line} ${f.name.length > 80 ? f.name.slice(0, 80) + '...' : f.name}`);

interface Key {
  site: string;
  path: string[];
  op: string | null;
}

function keyOf(frames: Frames): Key {
  const python = frames.filter(isPythonFrame);
  if (!python.length) {
    const native = frames.find((f) => keepFrame(f) && !/CUDACachingAllocator|c10::cuda::/.test(f.name));
    return { site: native ? printable(native.name.slice(0, 120)) : NO_STACK, path: [], op: null };
  }
  const user = python.filter((f) => !LIBRARY.test(f.filename));
  const op = python.find((f) => LIBRARY.test(f.filename));
  if (!user.length) return { site: short(python[0]), path: [], op: null };
  return { site: short(user[0]), path: user.slice(0, 4).reverse().map(short), op: op ? short(op) : null };
}

/** allocIndex -1 marks allocations alive before the trace (their stacks were never recorded). */
export function whereMemoryWas(live: Iterable<{ size: number; frames: Frames; allocIndex?: number }>, top = 10): WhereMemoryWas {
  const keys = new Map<Frames, Key>(); // frames lists are shared between events
  const sites = new Map<string, MemorySite>();
  let total = 0;
  let allocations = 0;
  for (const a of live) {
    let k = a.frames.length === 0 && a.allocIndex === -1 ? { site: BEFORE_TRACE, path: [], op: null } : keys.get(a.frames);
    if (!k) {
      k = keyOf(a.frames);
      keys.set(a.frames, k);
    }
    const id = `${k.site}\n${k.op ?? ''}`;
    let s = sites.get(id);
    if (!s) {
      s = { ...k, bytes: 0, count: 0 };
      sites.set(id, s);
    }
    s.bytes += a.size;
    s.count++;
    total += a.size;
    allocations++;
  }
  const ranked = [...sites.values()].sort((x, y) => y.bytes - x.bytes || x.site.localeCompare(y.site));
  return { total, allocations, sites: ranked.slice(0, top) };
}

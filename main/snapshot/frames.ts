// Stack frames as PyTorch's viewers show them: the unwinder's own frames, CPython's
// interpreter loop and dispatcher boilerplate left out (the same lists as
// _memory_viz.py's _frame_filter and MemoryViz.js's frameFilter).
import { isPythonFile, isTorchInternalFile } from '../contract/snapshot';
import { printable } from './printable';
import type { Frame, Frames } from './model';

const OMIT_FUNCTIONS = [
  'unwind::unwind',
  'CapturedTraceback::gather',
  'gather_with_cpp',
  '_start',
  '__libc_start_main',
  'PyEval_',
  'PyObject_',
  'PyFunction_',
];

const OMIT_FILENAMES = [
  'core/boxing',
  '/Register',
  '/Redispatch',
  'pythonrun.c',
  'Modules/main.c',
  'Objects/call.c',
  'Objects/methodobject.c',
  'pycore_ceval.h',
  'ceval.c',
  'cpython/abstract.h',
];

export function keepFrame(f: Frame): boolean {
  return !OMIT_FUNCTIONS.some((s) => f.name.includes(s)) && !OMIT_FILENAMES.some((s) => f.filename.includes(s));
}

/** Demangled C++ template names run to kilobytes; a line needs only their start. */
const MAX_NAME = 160;

export function formatFrame(f: Frame): string {
  const name = printable(f.name.length > MAX_NAME ? `${f.name.slice(0, MAX_NAME)}...` : f.name);
  if (f.line === 0 && (f.filename === '' || f.filename === '??')) return name;
  return `${printable(f.filename)}:${f.line}:${name}`;
}

/** The allocator's own frames say nothing about who asked for the memory. */
const ALLOCATOR_FRAME = /CUDACachingAllocator|c10::cuda::.*Allocator/;

/** A Python frame: see isPythonFile (the rule the screens read frames by, too). */
export function isPythonFrame(f: Frame): boolean {
  return isPythonFile(f.filename);
}

/** A frame of the user's code: Python outside torch's package (transformers, a training script). */
export function isUserFrame(f: Frame): boolean {
  return isPythonFile(f.filename) && !isTorchInternalFile(f.filename);
}

/**
 * The frames worth showing first, innermost first within each group: the user's Python
 * frames, then torch's own Python frames; only a stack with no Python frame at all (an
 * allocation on autograd's backward thread, or in C++ code) shows its filtered native frames.
 */
const topCache = new WeakMap<Frames, Map<number, string[]>>();

export function topFrames(frames: Frames, n = 5): string[] {
  // Stacks are shared between many events: filter each once (callers must not mutate).
  let byN = topCache.get(frames);
  if (!byN) {
    byN = new Map();
    topCache.set(frames, byN);
  }
  let hit = byN.get(n);
  if (!hit) {
    hit = computeTopFrames(frames, n);
    byN.set(n, hit);
  }
  return hit.slice();
}

function computeTopFrames(frames: Frames, n: number): string[] {
  const kept = frames.filter((f) => keepFrame(f) && !ALLOCATOR_FRAME.test(f.name));
  const python = kept.filter(isPythonFrame);
  const pick = python.length ? [...python.filter(isUserFrame), ...python.filter((f) => !isUserFrame(f))] : kept;
  return pick.slice(0, n).map(formatFrame);
}

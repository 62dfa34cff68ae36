// Turns an OOM into a diagnosis: which category held the memory and how much the cache held
// without using it. What would help is not guessed here: runner/remedies.ts simulates it.
import { CATEGORIES, type Category, type OomReport } from '../contract/runs';
import type { NativeOom } from '../addon/types';

export function diagnoseOom(oom: NativeOom): OomReport {
  const by = Object.fromEntries(CATEGORIES.map((c, i) => [c, oom.by[i] ?? 0])) as Record<Category, number>;
  let dominant: Category = 'activations';
  for (const c of CATEGORIES) if (by[c] > by[dominant]) dominant = c;
  const allocated = oom.allocated;
  const reservedUnallocated = Math.max(0, oom.reserved - oom.allocated);
  return {
    message: oom.message,
    requested: oom.requested,
    phase: oom.phase,
    iteration: oom.iteration,
    module: oom.module,
    allocated,
    reserved: oom.reserved,
    reserved_unallocated: reservedUnallocated,
    capacity: oom.capacity,
    by_category: by,
    dominant: { category: dominant, bytes: by[dominant], share: allocated > 0 ? by[dominant] / allocated : 0 },
    // Filled by the manager with the remedies the simulator checked (runner/remedies.ts).
    suggestions: [],
  };
}

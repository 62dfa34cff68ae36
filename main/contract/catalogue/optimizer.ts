// What an optimizer is to the contract: its arguments (type, range, default, meaning), how
// much state it keeps per parameter, and its cross-field rules. One file per optimizer in
// optimizers/, registered in index.ts.
import type { Issue } from './family';
import type { ArgsOf, Fields } from './fields';

export interface OptimizerDescription<K extends string = string, F extends Fields = Fields> {
  kind: K;
  label: string;
  summary: string;
  fields: F;
  /** State kept per trainable parameter, in parameter-sized buffers (Adam: exp_avg, exp_avg_sq). */
  stateBuffers(o: ArgsOf<F>): number;
  check(o: ArgsOf<F>): Issue[];
}

export function defineOptimizer<const K extends string, const F extends Fields>(d: OptimizerDescription<K, F>): OptimizerDescription<K, F> {
  return d;
}

/** Arguments every optimizer but none takes. */
export const lr = { type: 'number', min: 0, max: 10, minExclusive: true, default: 1e-3, label: 'Learning rate', meaning: 'lr' } as const;
export const foreach = {
  type: 'bool',
  default: true,
  label: 'foreach',
  meaning: "the multi-tensor step (PyTorch's default on CUDA): faster, with temporaries for all parameters at once",
} as const;
export const weightDecay = (d: number) =>
  ({ type: 'number', min: 0, max: 10, default: d, label: 'Weight decay', meaning: 'weight_decay' }) as const;

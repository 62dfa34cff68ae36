// none: no optimizer; gradients are computed and zeroed, nothing else is kept.
import { defineOptimizer } from '../optimizer';

export const none = defineOptimizer({
  kind: 'none',
  label: 'none',
  summary: 'No optimizer step: model.zero_grad() after backward.',
  fields: {},
  stateBuffers: () => 0,
  check: () => [],
});

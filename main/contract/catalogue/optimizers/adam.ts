// adam: torch.optim.Adam; exp_avg and exp_avg_sq per parameter, created at the first step.
import { defineOptimizer, foreach, lr, weightDecay } from '../optimizer';

export const adam = defineOptimizer({
  kind: 'adam',
  label: 'Adam',
  summary: 'torch.optim.Adam: two moment buffers per parameter.',
  fields: { lr, foreach, weight_decay: weightDecay(0) },
  stateBuffers: () => 2,
  check: () => [],
});

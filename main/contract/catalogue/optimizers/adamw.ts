// adamw: torch.optim.AdamW (decoupled weight decay, PyTorch's default 0.01).
import { defineOptimizer, foreach, lr, weightDecay } from '../optimizer';

export const adamw = defineOptimizer({
  kind: 'adamw',
  label: 'AdamW',
  summary: 'torch.optim.AdamW: Adam with decoupled weight decay; two moment buffers per parameter.',
  fields: { lr, foreach, weight_decay: weightDecay(0.01) },
  stateBuffers: () => 2,
  check: () => [],
});

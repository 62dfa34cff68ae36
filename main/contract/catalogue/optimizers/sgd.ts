// sgd: torch.optim.SGD; momentum > 0 keeps one momentum_buffer per parameter.
import { defineOptimizer, foreach, lr, weightDecay } from '../optimizer';

export const sgd = defineOptimizer({
  kind: 'sgd',
  label: 'SGD',
  summary: 'torch.optim.SGD: no state without momentum, one buffer per parameter with it.',
  fields: {
    lr,
    foreach,
    momentum: {
      type: 'number',
      min: 0,
      max: 1,
      maxExclusive: true,
      default: 0,
      label: 'Momentum',
      meaning: 'momentum; > 0 keeps a momentum_buffer per parameter',
    },
    weight_decay: weightDecay(0),
    nesterov: { type: 'bool', default: false, label: 'Nesterov', meaning: 'Nesterov momentum (needs momentum > 0)' },
  },
  stateBuffers: (o) => (o.momentum > 0 ? 1 : 0),
  check: (o) =>
    o.nesterov && o.momentum === 0
      ? [
          {
            path: ['optimizer', 'nesterov'],
            message: 'Nesterov momentum needs optimizer.momentum > 0 (PyTorch refuses it otherwise)',
            input: true,
          },
        ]
      : [],
});

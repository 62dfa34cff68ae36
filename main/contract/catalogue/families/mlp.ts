// mlp: Linear(in, hidden), ReLU, (depth-1) x [Linear(hidden, hidden), ReLU], Linear(hidden, out).
import { defineFamily } from '../family';
import { LIMITS } from '../limits';

export const mlp = defineFamily({
  kind: 'mlp',
  label: 'MLP (Linear + ReLU stack)',
  summary: 'The seed example: Linear layers with ReLU between them, input randn(batch, in).',
  fields: {
    in: {
      type: 'int',
      min: 1,
      max: LIMITS.features,
      default: 1024,
      label: 'Input features',
      meaning: 'in_features of the first Linear',
      unit: 'features',
    },
    hidden: {
      type: 'int',
      min: 1,
      max: LIMITS.features,
      default: 2048,
      label: 'Width (hidden)',
      meaning: 'out_features of every hidden Linear',
      unit: 'features',
    },
    depth: {
      type: 'int',
      min: 1,
      max: LIMITS.depth,
      default: 2,
      label: 'Depth (hidden layers)',
      meaning: 'number of Linear + ReLU layers before the output Linear',
      unit: 'layers',
    },
    out: {
      type: 'int',
      min: 1,
      max: LIMITS.features,
      default: 10,
      label: 'Output features',
      meaning: 'out_features of the last Linear',
      unit: 'features',
    },
  },
  specDefaults: {},
  losses: ['sum', 'mse', 'cross_entropy'],
  blocks: false,
  transformer: false,
  roles: { depth: 'depth', widths: ['in', 'hidden', 'out'] },
  loraTargets: [],
  loraDefaultTargets: [],
  presets: [{ id: 'seed-mlp', label: 'Seed MLP (1024-2048-2048-10)', model: { in: 1024, hidden: 2048, depth: 2, out: 10 } }],
  check: () => [],
  name: (m) => `mlp ${m.in}-${m.hidden}x${m.depth}-${m.out}`,
  parameters: (m) => m.in * m.hidden + m.hidden + (m.depth - 1) * (m.hidden * m.hidden + m.hidden) + m.hidden * m.out + m.out,
});

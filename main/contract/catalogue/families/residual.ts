// residual: depth blocks of (Linear, ReLU, Linear, ReLU) plus the block's input, width dim.
import { defineFamily } from '../family';
import { LIMITS } from '../limits';

export const residual = defineFamily({
  kind: 'residual',
  label: 'Residual blocks',
  summary: 'A stack of residual MLP blocks, the model the checkpointing lessons use.',
  fields: {
    dim: {
      type: 'int',
      min: 1,
      max: LIMITS.features,
      default: 512,
      label: 'Width (dim)',
      meaning: 'features in and out of every block',
      unit: 'features',
    },
    depth: {
      type: 'int',
      min: 1,
      max: LIMITS.depth,
      default: 20,
      label: 'Depth (blocks)',
      meaning: 'number of residual blocks',
      unit: 'blocks',
    },
  },
  specDefaults: {},
  losses: ['sum', 'mse', 'cross_entropy'],
  blocks: true,
  transformer: false,
  roles: { depth: 'depth', widths: ['dim'] },
  loraTargets: [],
  loraDefaultTargets: [],
  presets: [
    { id: 'seed-residual', label: 'Seed residual (512 x 20)', model: { dim: 512, depth: 20 } },
    { id: 'residual-1024', label: 'Residual 1024 x 16', model: { dim: 1024, depth: 16 } },
  ],
  check: () => [],
  name: (m) => `residual ${m.dim}x${m.depth}`,
  parameters: (m) => m.depth * 2 * (m.dim * m.dim + m.dim),
});

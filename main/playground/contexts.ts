// Block contexts are the engine's tag labels, "category|op|module", with the engine's
// singular category names ("input", "temporary"). The wire's categories are the run
// contract's plural ones (CATEGORIES in main/contract/runs.ts), which the segment map
// colours by; this renames the first field and leaves op and module as they are.
import { CATEGORIES } from '../contract/runs';
import type { SnapshotSegment } from '../contract/playground';

const ENGINE_TO_CONTRACT: Record<string, (typeof CATEGORIES)[number]> = {
  parameter: 'parameters',
  gradient: 'gradients',
  optimizer_state: 'optimizer_state',
  activation: 'activations',
  temporary: 'temporaries',
  input: 'inputs',
  workspace: 'workspace',
  other: 'other',
};

export function contractContext(context: string): string {
  if (!context) return context;
  const bar = context.indexOf('|');
  const head = bar < 0 ? context : context.slice(0, bar);
  const named = ENGINE_TO_CONTRACT[head];
  return named === undefined ? context : named + (bar < 0 ? '' : context.slice(bar));
}

export function withContractContexts(segments: SnapshotSegment[]): SnapshotSegment[] {
  return segments.map((s) => ({
    ...s,
    context: contractContext(s.context),
    blocks: s.blocks.map((b) => ({ ...b, context: contractContext(b.context) })),
  }));
}

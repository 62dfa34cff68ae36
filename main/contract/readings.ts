import { formatBytes } from './units';

// The protocol readings a run reports (native/engine/experiment/), in words people read:
// "it0_peak_fwd_bwd" is "peak in forward + backward (iteration 1)". Bytes are over the
// baseline (what was allocated before the model was built); two readings count cudaMalloc /
// cudaFree calls and are numbers, not sizes.
const LABELS: Record<string, string> = {
  input: 'input batch',
  after_input: 'after the input batch',
  params: 'weights',
  after_model: 'after building the model',
  after_forward: 'after the first forward',
  after_backward: 'after backward',
  after_zero_grad: 'after zero_grad',
  after_loop: 'after the loop (graphs kept)',
  after_prefill: 'after the prefill',
  after_generate: 'after generation (caches alive)',
  peak: 'peak',
  peak_fwd_bwd: 'peak in forward + backward',
  peak_step: 'peak in the optimizer step',
  peak_prefill: 'peak in the prefill',
  peak_decode: 'peak while decoding',
  peak_generate: 'peak in generate()',
  reserved: 'reserved',
  reserved_peak: 'peak reserved',
  reserved_end: 'reserved at the end',
  base: 'baseline',
  num_device_alloc: 'cudaMalloc calls',
  num_device_free: 'cudaFree calls',
};

const COUNTS = new Set(['num_device_alloc', 'num_device_free']);

/** Whether a reading is a count of calls rather than bytes. */
export const isCountReading = (key: string): boolean => COUNTS.has(key);

/** "it0_peak_step" -> "peak in the optimizer step (iteration 1)"; an unknown key stays as it is. */
export function readingLabel(key: string): string {
  const it = /^it([0-9]+)_(.+)$/.exec(key);
  const base = it ? it[2] : key;
  const label = LABELS[base] ?? base.replace(/_/g, ' ');
  return it ? `${label} (iteration ${Number(it[1]) + 1})` : label;
}

/** A reading's value for people: "1.50 GiB", or "12 calls" for a count. */
export const formatReading = (key: string, value: number): string =>
  isCountReading(key) ? `${value.toLocaleString('en-US')} calls` : formatBytes(value);

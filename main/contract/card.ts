// The whole card: what nvidia-smi shows is PyTorch's reserved memory plus the CUDA context and
// library handles, which PyTorch does not count. One wording for the panel, the CLI and fit.
import { formatBytes } from './units';

export const CONTEXT_LABEL = 'CUDA context & libraries';

export interface CardMemory {
  /** The card's total (cudaMemGetInfo). */
  total: number;
  /** Bytes outside PyTorch's allocator (DeviceInfo.context). */
  context: number;
  /** NCCL's communicator buffers per rank (data parallel), also outside the allocator. */
  nccl?: number;
}

export const NCCL_LABEL = 'NCCL buffers';

/** "peak reserved 21.30 GiB + CUDA context 767.00 MiB = 22.05 GiB of 23.55 GiB" */
export function wholeCard(peakReserved: number, card: CardMemory): string {
  const nccl = card.nccl ?? 0;
  const used = peakReserved + card.context + nccl;
  if (card.context === 0 && nccl === 0) return `peak reserved ${formatBytes(peakReserved)} of ${formatBytes(card.total)}`;
  return (
    `peak reserved ${formatBytes(peakReserved)}` +
    (card.context ? ` + CUDA context ${formatBytes(card.context)}` : '') +
    (nccl ? ` + NCCL ${formatBytes(nccl)}` : '') +
    ` = ${formatBytes(used)} of ${formatBytes(card.total)}`
  );
}

/** What the allocator may reserve: the spec's cap, and never past total - context. */
export function allocatorLimit(card: CardMemory, capacity: number | null): number {
  const usable = Math.max(0, card.total - card.context - (card.nccl ?? 0));
  return capacity === null ? usable : Math.min(capacity, usable);
}

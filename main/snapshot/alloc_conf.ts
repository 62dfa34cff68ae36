// A snapshot's allocator_settings dict as a PYTORCH_CUDA_ALLOC_CONF string, limited to the
// keys that change where memory goes (the pinned-memory and locking keys do not).
import { allocConfItems } from '../contract/alloc_conf';
import type { SnapshotAllocatorSettings } from './model';

const MiB = 1024 * 1024;

export function allocConfFromSettings(a: SnapshotAllocatorSettings | null): string {
  if (!a) return '';
  const parts: string[] = [];
  if (a.maxSplitSize !== null) {
    // PyTorch stores max_split_size_mb * 1 MiB; anything else came from a hand-made file.
    parts.push(`max_split_size_mb:${Math.floor(a.maxSplitSize / MiB)}`);
  }
  if (a.garbageCollectionThreshold > 0) parts.push(`garbage_collection_threshold:${a.garbageCollectionThreshold}`);
  if (a.expandableSegments) parts.push('expandable_segments:True');
  const div = a.roundupPower2Divisions;
  if (div.some((d) => d !== 0)) {
    if (div.every((d) => d === div[0])) parts.push(`roundup_power2_divisions:${div[0]}`);
    else parts.push(`roundup_power2_divisions:[${div.map((d, i) => `${2 ** i}:${d}`).join(',')}]`);
  }
  return parts.join(',');
}

/** The raw string also names the backend; a cudaMallocAsync run is not what we model. */
export function confBackend(conf: string): 'native' | 'cudaMallocAsync' {
  return allocConfItems(conf).some((x) => x.key === 'backend' && x.value === 'cudaMallocAsync') ? 'cudaMallocAsync' : 'native';
}

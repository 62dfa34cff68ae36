// The native playground session (EngineSession in native/addon/engine_binding.cpp): ops on
// the engine and its caching allocator, tensors named by integer ids. Typed here because
// the addon's exports are `unknown` outside the areas that declare them.
import type { NativeAddon } from '../addon/types';
import type { SnapshotSegment } from '../contract/playground';

export type NativeDType = 'float32' | 'float16' | 'bfloat16' | 'float64';

export interface NativeTensorInfo {
  shape: number[];
  dtype: string;
  /** numel * element size: the bytes this tensor's elements span. */
  bytes: number;
  /** The bytes of the storage underneath (views share it). */
  storageBytes: number;
  /** The allocator block holding the storage (rounded to 512 B, or the whole segment). */
  blockBytes: number;
  address: number;
  /** Same key: same storage. */
  storageKey: number;
  isView: boolean;
  contiguous: boolean;
}

export interface NativeSessionDevice {
  id: string;
  kind: string;
  name: string;
  total: number;
  backend: string;
  capacity: number | null;
}

export interface NativeSession {
  randn(shape: number[], dtype?: NativeDType): number;
  zeros(shape: number[], dtype?: NativeDType): number;
  ones(shape: number[], dtype?: NativeDType): number;
  empty(shape: number[], dtype?: NativeDType): number;
  view(id: number, shape: number[]): number;
  reshape(id: number, shape: number[]): number;
  clone(id: number): number;
  contiguous(id: number): number;
  to(id: number, dtype: NativeDType): number;
  t(id: number): number;
  matmul(a: number, b: number): number;
  del(id: number): void;
  info(id: number): NativeTensorInfo;
  emptyCache(): void;
  memoryAllocated(): number;
  memoryReserved(): number;
  maxMemoryAllocated(): number;
  maxMemoryReserved(): number;
  resetPeak(): void;
  memorySummary(abbreviated?: boolean): string;
  snapshot(): { segments: SnapshotSegment[] };
  device(): NativeSessionDevice;
  /** Frees every tensor and the allocator's segments now; later calls throw. */
  close(): void;
}

export interface NativeSessionOptions {
  device: string;
  capacity?: number | null;
  allocConf?: string;
}

type SessionCtor = new (options: NativeSessionOptions) => NativeSession;

/** Opens a session; throws (with the native message) for a bad device, capacity or alloc conf. */
export function openNativeSession(native: NativeAddon, options: NativeSessionOptions): NativeSession {
  const ctor = (native.EngineSession ?? native.Session) as SessionCtor | undefined;
  if (typeof ctor !== 'function') throw new Error('this build of the native addon has no playground (EngineSession is missing)');
  const s = new ctor(options);
  if (typeof s.snapshot !== 'function' || typeof s.close !== 'function')
    throw new Error('the native addon is older than the playground: rebuild it (npm run build:native)');
  return s;
}

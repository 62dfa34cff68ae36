// The native playground session (EngineSession in native/addon/engine_binding.cpp): ops on
// the engine and its caching allocator, tensors named by integer ids.
import type { NativeAddon, NativeDType, NativeSession, NativeSessionDevice, NativeSessionOptions, NativeTensorInfo } from '../addon/types';

export type { NativeDType, NativeTensorInfo, NativeSessionDevice, NativeSession, NativeSessionOptions };

/** Opens a session; throws (with the native message) for a bad device, capacity or alloc conf. */
export function openNativeSession(native: NativeAddon, options: NativeSessionOptions): NativeSession {
  const ctor = native.EngineSession ?? native.Session;
  if (typeof ctor !== 'function') throw new Error('this build of the native addon has no playground (EngineSession is missing)');
  const s = new ctor(options);
  if (typeof s.snapshot !== 'function' || typeof s.close !== 'function')
    throw new Error('the native addon is older than the playground: rebuild it (npm run build:native)');
  return s;
}

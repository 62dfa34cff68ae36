// Types of what the native addon exports. Each area of the engine adds its part here;
// the TypeScript side never touches the addon except through these.
import type { DeviceInfo } from '../contract/devices';

export interface NativeAddon {
  /** Every simulated preset, then each CUDA GPU found (none without a GPU). */
  listDevices(): DeviceInfo[];
  /** Build facts: version, whether the CUDA backend was compiled in. */
  buildInfo(): { version: string; cuda: boolean; cudaRuntime: number };
  [extra: string]: unknown;
}

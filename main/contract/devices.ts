// A GPU the lab can run on: a simulated preset or a real CUDA device.
export interface DeviceInfo {
  id: string; // "sim:h100-80gb", "cuda:0"
  kind: 'sim' | 'cuda';
  name: string;
  total: number; // bytes
  free: number; // bytes
  /** Bytes the card holds outside PyTorch's allocator: the CUDA context and library handles
   *  (a simulated preset's measured or estimated figure, native/device/presets.cpp; on cuda:N,
   *  total - free at listing, other processes included; 0 for sim:custom:SIZE). The allocator
   *  can reserve at most total - context. */
  context: number;
  /** Whether `context` was measured on this card or estimated, and how (native/device/presets.cpp;
   *  on cuda:N, measured at listing). Absent from an addon built before this was reported. */
  contextSource?: 'measured' | 'estimated';
  contextNote?: string;
  ordinal: number;
  memBandwidthGBs: number;
  fp32Tflops: number;
  bf16Tflops: number;
}

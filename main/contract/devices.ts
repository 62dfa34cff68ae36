// A GPU the lab can run on: a simulated preset or a real CUDA device.
export interface DeviceInfo {
  id: string; // "sim:h100-80gb", "cuda:0"
  kind: 'sim' | 'cuda';
  name: string;
  total: number; // bytes
  free: number; // bytes
  ordinal: number;
  memBandwidthGBs: number;
  fp32Tflops: number;
  bf16Tflops: number;
}

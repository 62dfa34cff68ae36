"""PyTorch's own attention on the shapes of vramlab_bench_attention, the other column of
the attention rows of test/gpu/bench.sh: scaled_dot_product_attention restricted to the
flash backend (SDPBackend.FLASH_ATTENTION), q, k, v as views of one packed (B, S, 3, H, D)
buffer as the models' qkv projection makes them. ms per forward, and per backward alone
(autograd.grad on a retained graph), CUDA events, mean of 20 after 10 warm-up calls (3 let the first shape's backward read 6x its later time on H100).
  python3 bench/torch/attention.py B H S D bf16|f16 CAUSAL    -> one JSON line"""
import json
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel


def time_ms(f, iters=20, warm=10):
    for _ in range(warm):
        f()
    torch.cuda.synchronize()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    for _ in range(iters):
        f()
    b.record()
    torch.cuda.synchronize()
    return a.elapsed_time(b) / iters


def main():
    B, H, S, D = (int(x) for x in sys.argv[1:5])
    name = sys.argv[5] if len(sys.argv) > 5 else "bf16"
    causal = len(sys.argv) <= 6 or sys.argv[6] != "0"
    dt = {"bf16": torch.bfloat16, "f16": torch.float16}[name]
    torch.manual_seed(1)
    qkv = torch.randn(B, S, 3, H, D, device="cuda", dtype=dt, requires_grad=True)
    q, k, v = (qkv[:, :, i].transpose(1, 2) for i in range(3))
    go = torch.randn(B, H, S, D, device="cuda", dtype=dt)
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        fwd_ms = time_ms(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal))
        out = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        bwd_ms = time_ms(lambda: torch.autograd.grad(out, (q, k, v), go, retain_graph=True))
    flop = 4.0 * B * H * S * S * D * (0.5 if causal else 1.0)  # as vramlab_bench_attention counts
    print(json.dumps({"shape": f"B{B} H{H} S{S} D{D} {name}{' causal' if causal else ''}", "fwd_ms": round(fwd_ms, 3),
                      "bwd_ms": round(bwd_ms, 3), "fwd_tflops": round(flop / fwd_ms * 1e-9, 1),
                      "bwd_tflops": round(2.5 * flop / bwd_ms * 1e-9, 1)}))


if __name__ == "__main__":
    main()

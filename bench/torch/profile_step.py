"""Where vramlab's transformer train step spends its GPU time, kernel by kernel: runs
libvramlab_step.so (bench/engine/bench_transformer_step.cpp built as a library) under
PyTorch's profiler, which records every kernel launched in the process, and prints the
kernels by total time beside PyTorch's own step for the same row; then one table of
kernel families (ms per step and share of the step's kernel time), ours beside PyTorch's.
  python3 bench/torch/profile_step.py LIB.so ROW [PROTOCOL_DIR]"""
import ctypes, os, sys

import torch
from torch.profiler import profile, ProfilerActivity

lib_path, row = sys.argv[1], sys.argv[2]
torch.cuda.init()
lib = ctypes.CDLL(os.path.abspath(lib_path))
args = [b"step", b"--only", row.encode(), b"--steps", b"2"]
argv = (ctypes.c_char_p * len(args))(*args)
lib.vramlab_bench_transformer_step(len(args), argv)  # warm: kernels load, cuBLAS picks

# First match wins: the order puts the specific names before the generic ones (PyTorch's
# copies and activations are elementwise kernels too).
FAMILIES = [
    # model upload and the loss read: setup in these profiles (PyTorch's .cuda() of the model
    # is inside the profiled call), not step time
    ("host transfers (setup)", ["memcpy htod", "memcpy dtoh"]),
    ("attention", ["flash", "fmha", "attn", "attention", "cudnn"]),
    ("matmul (cuBLAS)", ["gemm", "cutlass", "xmma", "nvjet", "cublas", "splitk", "sm90_", "sm80_"]),
    ("layer norm / RMSNorm", ["layer_norm", "layernorm", "rms_norm", "rmsnorm"]),
    ("softmax + nll (cross-entropy)", ["softmax", "nll", "cross_entropy"]),
    ("optimizer (AdamW)", ["adam", "multi_tensor_apply"]),
    ("embedding", ["embedding", "index_select", "index_add", "indexing", "index_"]),
    ("copies / casts / fills", ["copy", "memcpy", "memset", "fill"]),
    ("gelu / silu", ["gelu", "silu"]),
    ("rotary", ["rope"]),
    ("reductions", ["reduce", "sum"]),
    ("pointwise", ["elementwise", "pointwise", "vectorized", "unrolled", "warp_row"]),
]


def families(prof, steps):
    """{family: ms per step} from a profile's kernels (self device time)."""
    out = {}
    for e in prof.key_averages():
        us = getattr(e, "self_device_time_total", None)
        if us is None:
            us = getattr(e, "self_cuda_time_total", 0)
        if not us:
            continue
        name = e.key.lower()
        fam = next((f for f, keys in FAMILIES if any(k in name for k in keys)), "other")
        out[fam] = out.get(fam, 0.0) + us / 1000.0 / steps
    return out


OUR_STEPS = 1 + 3 + 5  # bench_main's three runs with --steps 2
with profile(activities=[ProfilerActivity.CUDA]) as p:
    lib.vramlab_bench_transformer_step(len(args), argv)
    torch.cuda.synchronize()
print(f"== vramlab, {row}: 1 + 3 + 5 steps (three runs), CUDA kernels by total time")
print(p.key_averages().table(sort_by="cuda_time_total", row_limit=22, max_name_column_width=70))
ours_fam, torch_fam = families(p, OUR_STEPS), None

if len(sys.argv) > 3:
    sys.path.insert(0, os.path.abspath(os.path.dirname(__file__)))
    sys.argv = [sys.argv[0], "--transformers", sys.argv[3]]
    import train_step
    m, b = train_step.TRANSFORMERS[row]
    sys.path.insert(0, os.path.abspath(sys.argv[2]))
    import torch_protocol as proto
    with profile(activities=[ProfilerActivity.CUDA]) as p:
        train_step.time_transformer(proto, m, b, steps=5, warm=1)
    print(f"== PyTorch eager, {row}: 6 steps, CUDA kernels by total time")
    print(p.key_averages().table(sort_by="cuda_time_total", row_limit=15, max_name_column_width=70))
    torch_fam = families(p, 6)

ot = sum(ours_fam.values())
tt = sum(torch_fam.values()) if torch_fam else 0.0
print(f"== {row}: kernel time per step by family (ours vs PyTorch eager)")
print(f"{'family':32} {'ours ms':>8} {'share':>6} {'torch ms':>9} {'share':>6}")
for fam in sorted(set(ours_fam) | set(torch_fam or {}), key=lambda f: -ours_fam.get(f, 0.0)):
    o = ours_fam.get(fam, 0.0)
    t = (torch_fam or {}).get(fam, 0.0)
    print(f"{fam:32} {o:8.2f} {o / ot if ot else 0:6.1%} {t:9.2f} {t / tt if tt else 0:6.1%}")
print(f"{'total kernel time':32} {ot:8.2f} {'':6} {tt:9.2f}")

"""Where vramlab's transformer train step spends its GPU time, kernel by kernel: runs
libvramlab_step.so (bench/engine/bench_transformer_step.cpp built as a library) under
PyTorch's profiler, which records every kernel launched in the process, and prints the
kernels by total time beside PyTorch's own step for the same row.
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
with profile(activities=[ProfilerActivity.CUDA]) as p:
    lib.vramlab_bench_transformer_step(len(args), argv)
    torch.cuda.synchronize()
print(f"== vramlab, {row}: 1 + 3 + 5 steps (three runs), CUDA kernels by total time")
print(p.key_averages().table(sort_by="cuda_time_total", row_limit=22, max_name_column_width=70))

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

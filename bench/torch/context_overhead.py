"""Device memory a training process holds outside PyTorch's allocator: the CUDA context, the
cuBLAS / cuBLASLt handles and workspaces' owners, autograd's device thread and the attention
kernels, which nvidia-smi counts and torch.cuda.memory_reserved() does not. The figure for a
GPU preset (native/device/presets.cpp `context`) is the last stage's.

Run on the GPU machine, in a fresh process, with nothing else on the card:
  python3 bench/torch/context_overhead.py > context.json
Prints {device, driver, torch, cuda, total_bytes, stages: [{stage, outside_pytorch_bytes}]},
cumulative: each stage's figure is (total - free) from cudaMemGetInfo minus memory_reserved(),
read after a device synchronize once that stage's work has run.
"""
import json
import subprocess

import torch
import torch.nn.functional as F


def driver_version():
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, check=True).stdout
        return out.strip().splitlines()[0]
    except (OSError, subprocess.CalledProcessError, IndexError):
        return None


stages = []


def stage(name):
    # Everything queued must have run (and loaded its kernels) before the card is read.
    torch.cuda.synchronize()
    free, total = torch.cuda.mem_get_info()
    stages.append({"stage": name, "outside_pytorch_bytes": (total - free) - torch.cuda.memory_reserved()})


# 1. The context: CUDA initialised and a first tiny tensor (the allocator's first segment).
torch.cuda.init()
tiny = torch.zeros(1, device="cuda")
stage("cuda context")

# 2. cuBLAS: the first matmul creates the handle (its workspace is PyTorch's, reserved).
a = torch.randn(256, 256, device="cuda")
b = a @ a
stage("cublas handle (first matmul)")

# 3. cuBLASLt (addmm with a bias, fp32 and under bf16 autocast) and a backward, whose
#    autograd device thread makes its own handles.
lin = torch.nn.Linear(256, 256).cuda()
lin(a).sum().backward()
with torch.autocast("cuda", dtype=torch.bfloat16):
    y = lin(a)
y.float().sum().backward()
stage("cublaslt + backward")

# 4. Scaled dot-product attention forward and backward: the flash (bf16) and memory-efficient
#    (fp32) kernels are loaded, as a transformer step loads them.
q = torch.randn(2, 4, 128, 64, device="cuda", dtype=torch.bfloat16, requires_grad=True)
F.scaled_dot_product_attention(q, q, q, is_causal=True).sum().backward()
q32 = torch.randn(2, 4, 128, 64, device="cuda", requires_grad=True)
F.scaled_dot_product_attention(q32, q32, q32, is_causal=True).sum().backward()
stage("sdpa forward + backward")

print(json.dumps({
    "device": torch.cuda.get_device_name(),
    "driver": driver_version(),
    "torch": torch.__version__,
    "cuda": torch.version.cuda,
    "total_bytes": torch.cuda.mem_get_info()[1],
    "stages": stages,
}, indent=1))

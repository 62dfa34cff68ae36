"""PyTorch's train step split into phases, for the columns of bench_train_step's GPU
table: forward + loss, backward, optimizer step + zero_grad (CUDA events between the
phases of each step), plus the host time to enqueue one step onto an idle GPU. Same
models and protocol as train_step.py. Prints a table; --json for JSON."""
import json
import sys
import time

import torch

from train_step import model_for


def phases(name, prec, steps=50, warm=5):
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = prec == "tf32"
    model, batch, d_in = model_for(name)
    model = model.cuda()
    x = torch.randn(batch, d_in, device="cuda")
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(prec)

    def step(mark=lambda k: None):
        mark(0)
        if dtype is None:
            y = model(x)
        else:
            with torch.autocast("cuda", dtype=dtype):
                y = model(x)
        loss = y.float().sum()
        mark(1)
        loss.backward()
        mark(2)
        opt.step()
        opt.zero_grad(set_to_none=True)
        mark(3)

    for _ in range(warm):
        step()
    torch.cuda.synchronize()
    ev = [[torch.cuda.Event(enable_timing=True) for _ in range(4)] for _ in range(steps)]
    for i in range(steps):
        step(lambda k: ev[i][k].record())
    torch.cuda.synchronize()
    out = [sum(ev[i][k].elapsed_time(ev[i][k + 1]) for i in range(steps)) / steps for k in range(3)]
    host = 0.0
    for _ in range(10):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        step()
        host += time.perf_counter() - t0
    torch.cuda.synchronize()
    return {"fwd_ms": out[0], "bwd_ms": out[1], "opt_ms": out[2], "enq_ms": host * 100.0}


if __name__ == "__main__":
    res = {}
    for n in ["mlp_b256", "deep1024x16_b512", "deep4096x8_b4096"]:
        for p in ["fp32", "tf32", "bf16"]:
            res[f"{n}/{p}"] = phases(n, p)
    if "--json" in sys.argv:
        print(json.dumps(res, indent=1))
    else:
        print(f"{'workload/prec':28} {'fwd_ms':>8} {'bwd_ms':>8} {'opt_ms':>8} {'enq_ms':>8}")
        for k, v in res.items():
            print(f"{k:28} {v['fwd_ms']:8.3f} {v['bwd_ms']:8.3f} {v['opt_ms']:8.3f} {v['enq_ms']:8.3f}")

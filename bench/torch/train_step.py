"""PyTorch eager train-step time, as pytorch_reference.json's train_step_ms was taken:
forward + sum loss + backward + Adam step + zero_grad(set_to_none), CUDA events, mean of 50
after 5 warm-up steps. Prints JSON {name: ms}."""
import json
import sys

import torch
import torch.nn as nn


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d, d), nn.ReLU(), nn.Linear(d, d), nn.ReLU())

    def forward(self, x):
        return x + self.net(x)


def model_for(name):
    if name.startswith("mlp"):
        return nn.Sequential(nn.Linear(1024, 2048), nn.ReLU(), nn.Linear(2048, 2048), nn.ReLU(), nn.Linear(2048, 10)), 256, 1024
    dims, b = name.split("_b")
    d, n = dims[len("deep"):].split("x")
    return nn.Sequential(*[Block(int(d)) for _ in range(int(n))]), int(b), int(d)


def time_step(name, prec, steps=50, warm=5):
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = prec == "tf32"
    model, batch, d_in = model_for(name)
    model = model.cuda()
    x = torch.randn(batch, d_in, device="cuda")
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(prec)

    def step():
        if dtype is None:
            y = model(x)
        else:
            with torch.autocast("cuda", dtype=dtype):
                y = model(x)
        loss = y.float().sum()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    for _ in range(warm):
        step()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(steps):
        step()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / steps


if __name__ == "__main__":
    names = ["mlp_b256", "deep1024x16_b512", "deep4096x8_b4096"]
    out = {}
    for n in names:
        for p in ["fp32", "tf32", "bf16"]:
            out[f"{n}/{p}"] = time_step(n, p)
    print(json.dumps(out, indent=1))

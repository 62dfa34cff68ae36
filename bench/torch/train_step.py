"""PyTorch eager train-step time, the other column of vramlab's same-run benchmark tables
(test/gpu/bench.sh): forward + sum loss + backward + Adam step + zero_grad(set_to_none),
CUDA events, mean of 50 after 5 warm-up steps. Prints JSON {name: ms}.
  python3 bench/torch/train_step.py [--transformers PROTOCOL_DIR]
--transformers times the transformer rows instead (bench_transformer_step.cpp's): the
GPT/Llama models of PROTOCOL_DIR/torch_protocol.py, a measuring tool kept outside the
project, bf16 autocast, cross-entropy, AdamW."""
import json
import os
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


def timed(step, steps, warm):
    """Mean ms of `steps` calls after `warm` untimed ones, CUDA events around the loop."""
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

    return timed(step, steps, warm)


TRANSFORMERS = {  # the same rows as bench/engine/bench_transformer_step.cpp
    "gpt2_small_b8_s1024/bf16": ({"kind": "gpt", "vocab": 50257, "seq": 1024, "dim": 768, "depth": 12, "heads": 12}, 8),
    "llama_d1024_l8_b4_s1024/bf16": ({"kind": "llama", "vocab": 32000, "seq": 1024, "dim": 1024, "depth": 8,
                                      "heads": 16, "kv_heads": 4, "ffn": 2816}, 4),
    "llama3_d2048_l16_b1_s4096/bf16": ({"kind": "llama", "vocab": 128256, "seq": 4096, "dim": 2048, "depth": 16,
                                        "heads": 32, "kv_heads": 8, "ffn": 8192}, 1),
}


def time_transformer(proto, m, batch, steps=20, warm=3):
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    model = (proto.Gpt if m["kind"] == "gpt" else proto.Llama)(m, "none").cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01, foreach=True)
    x = torch.randint(0, m["vocab"], (batch, m["seq"]), device="cuda")
    t = torch.randint(0, m["vocab"], (batch, m["seq"]), device="cuda")

    def step():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            y = model(x)
        loss = torch.nn.functional.cross_entropy(y.view(-1, y.size(-1)), t.view(-1))
        del y
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    return timed(step, steps, warm)


if __name__ == "__main__":
    if "--transformers" in sys.argv:
        sys.path.insert(0, os.path.abspath(sys.argv[sys.argv.index("--transformers") + 1]))
        import torch_protocol as proto
        print(json.dumps({k: time_transformer(proto, m, b) for k, (m, b) in TRANSFORMERS.items()}, indent=1))
        sys.exit(0)
    names = ["mlp_b256", "deep1024x16_b512", "deep4096x8_b4096"]
    out = {}
    for n in names:
        for p in ["fp32", "tf32", "bf16"]:
            out[f"{n}/{p}"] = time_step(n, p)
    print(json.dumps(out, indent=1))

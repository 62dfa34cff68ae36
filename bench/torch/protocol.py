"""PyTorch side of the parity protocol (test/refs/README.md), for many configurations.

Run on a GPU machine: python3 bench/torch/protocol.py configs.json > readings.json
Each config uses the experiment-spec keys (model, batch, iterations, accum, checkpoint,
precision, optimizer, set_to_none, mode, keep_loss_graph). Prints one JSON object:
{"device": ..., "torch": ..., "runs": [{"spec": ..., "readings": {...}, "oom": null}]}.
"""
import json
import math
import sys

import torch
import torch.nn as nn
from torch.utils.checkpoint import checkpoint


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d, d), nn.ReLU(), nn.Linear(d, d), nn.ReLU())

    def forward(self, x):
        return x + self.net(x)


class Residual(nn.Module):
    def __init__(self, dim, depth, ckpt):
        super().__init__()
        self.blocks = nn.ModuleList(Block(dim) for _ in range(depth))
        depth = len(self.blocks)
        if ckpt == "none":
            self.seg = 0
        elif ckpt == "block":
            self.seg = 1
        elif ckpt == "sqrt":
            self.seg = math.ceil(depth / round(math.sqrt(depth)))
        else:
            self.seg = int(ckpt["every"])

    def forward(self, x):
        if not self.seg:
            for b in self.blocks:
                x = b(x)
            return x
        for i in range(0, len(self.blocks), self.seg):
            chunk = self.blocks[i : i + self.seg]

            def run(inp, chunk=chunk):
                for b in chunk:
                    inp = b(inp)
                return inp

            x = checkpoint(run, x, use_reentrant=False)
        return x


def mlp(m):
    layers = [nn.Linear(m["in"], m["hidden"]), nn.ReLU()]
    for _ in range(m["depth"] - 1):
        layers += [nn.Linear(m["hidden"], m["hidden"]), nn.ReLU()]
    layers.append(nn.Linear(m["hidden"], m["out"]))
    return nn.Sequential(*layers)


def in_features(m):
    return m["in"] if m["kind"] == "mlp" else m["dim"]


def make_opt(spec, params):
    o = spec.get("optimizer", "sgd")
    if isinstance(o, dict):
        kind, lr, foreach = o["kind"], o.get("lr", 1e-3), o.get("foreach", None)
    else:
        kind, lr, foreach = o, 1e-3, None
    if kind == "none":
        return None
    if kind == "sgd":
        return torch.optim.SGD(params, lr=lr, foreach=foreach)
    if kind == "adam":
        return torch.optim.Adam(params, lr=lr, foreach=foreach)
    if kind == "adamw":
        return torch.optim.AdamW(params, lr=lr, foreach=foreach)
    raise ValueError(kind)


def run(spec):
    torch.manual_seed(0)
    m = spec["model"]
    prec = spec.get("precision", "fp32")
    torch.backends.cuda.matmul.allow_tf32 = prec == "tf32"
    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(prec)
    mem = torch.cuda.memory_allocated
    base = mem()
    model = (mlp(m) if m["kind"] == "mlp" else Residual(m["dim"], m["depth"], spec.get("checkpoint", "none"))).cuda()
    r = {"params": mem() - base}
    batch = spec.get("batch", 256)
    x = torch.randn(batch, in_features(m), device="cuda")
    # The loss's target is made with the input, so it counts in the "input" reading.
    loss_kind = spec.get("loss", "sum")
    n_out = m["out"] if m["kind"] == "mlp" else m["dim"]
    if loss_kind == "mse":
        target = torch.randn(batch, n_out, device="cuda")
    elif loss_kind == "cross_entropy":
        target = torch.randint(0, n_out, (batch,), device="cuda")
    else:
        target = None
    r["input"] = mem() - base

    def loss_of(y):
        if loss_kind == "mse":
            return torch.nn.functional.mse_loss(y.float(), target)
        if loss_kind == "cross_entropy":
            return torch.nn.functional.cross_entropy(y.float(), target)
        return y.float().sum()
    mode = spec.get("mode", "train")

    def fwd():
        if dtype is not None:
            with torch.autocast("cuda", dtype=dtype):
                return model(x)
        return model(x)

    if mode == "inference":
        with torch.no_grad():
            torch.cuda.reset_peak_memory_stats()
            y = fwd()
            r["after_forward"] = mem() - base
            r["peak"] = torch.cuda.max_memory_allocated() - base
        del y
    elif mode == "loss_accumulation":
        total = 0.0 if not spec.get("keep_loss_graph", True) else torch.zeros((), device="cuda")
        for _ in range(spec.get("iterations", 10)):
            loss = loss_of(fwd())
            if spec.get("keep_loss_graph", True):
                total = total + loss
            else:
                total += loss.item()
        del loss
        r["after_loop"] = mem() - base
        del total
    else:
        opt = make_opt(spec, model.parameters())
        accum = spec.get("accum", 1)
        for it in range(spec.get("iterations", 2)):
            torch.cuda.reset_peak_memory_stats()
            for mb in range(accum):
                y = fwd()
                if it == 0 and mb == 0:
                    r["after_forward"] = mem() - base
                loss = loss_of(y) / accum
                del y
                loss.backward()
                del loss
            r[f"it{it}_peak_fwd_bwd"] = torch.cuda.max_memory_allocated() - base
            r[f"it{it}_after_backward"] = mem() - base
            torch.cuda.reset_peak_memory_stats()
            if opt is not None:
                opt.step()
            r[f"it{it}_peak_step"] = torch.cuda.max_memory_allocated() - base
            if opt is not None:
                opt.zero_grad(set_to_none=spec.get("set_to_none", True))
            else:
                model.zero_grad(set_to_none=spec.get("set_to_none", True))
            r[f"it{it}_after_zero_grad"] = mem() - base
        del opt
    del model, x, target
    torch.cuda.synchronize()
    return r


def warm_up(kind):
    # Both cuBLAS workspaces (this thread's and autograd's) exist before any base is read.
    a = torch.randn(64, 64, device="cuda", requires_grad=True)
    if kind == "linear":
        l = nn.Linear(64, 64).cuda()
        l(a).sum().backward()
        del l
    else:
        (a @ a).sum().backward()
    del a
    torch.cuda.synchronize()
    return torch.cuda.memory_allocated()


def one(spec, warm):
    w = warm_up(warm)
    try:
        return {"spec": spec, "warmup": warm, "warm_bytes": w, "readings": run(spec), "oom": None}
    except torch.OutOfMemoryError as e:
        return {"spec": spec, "warmup": warm, "readings": None, "oom": str(e)}


if __name__ == "__main__":
    # protocol.py SPECS.json [matmul|linear]: each spec in a fresh process, so one run's
    # lazily created state (workspaces) can't leak into the next.
    import subprocess
    if sys.argv[1] == "--one":
        print(json.dumps(one(json.loads(sys.argv[2]), sys.argv[3])))
        sys.exit(0)
    specs = json.load(open(sys.argv[1]))
    warm = sys.argv[2] if len(sys.argv) > 2 else "matmul"
    par = int(sys.argv[3]) if len(sys.argv) > 3 else 1  # processes at once: each has its own allocator
    out = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "runs": []}

    def go(spec):
        p = subprocess.run([sys.executable, __file__, "--one", json.dumps(spec), warm], capture_output=True, text=True)
        if p.returncode != 0:
            return {"spec": spec, "warmup": warm, "error": p.stderr[-2000:]}
        return json.loads(p.stdout)

    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(par) as ex:
        out["runs"] = list(ex.map(go, specs))
    print(json.dumps(out, indent=1))

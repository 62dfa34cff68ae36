"""The attention rows side by side: vramlab's kernels (vramlab_bench_attention) and
PyTorch's flash SDPA (bench/torch/attention.py), both measured in this run on this GPU.
Each input holds one JSON line per shape, joined on "shape".
  python3 bench/torch/attention_table.py OURS.jsonl TORCH.jsonl
Target: ours / torch <= 1.2 for forward and backward (rows without a flash column,
fp32, have no target)."""
import json
import sys

TARGET = 1.2


def rows(path):
    out = {}
    for line in open(path):
        line = line.strip()
        if line.startswith("{"):
            r = json.loads(line)
            out[r["shape"]] = r
    return out


ours, torch = rows(sys.argv[1]), rows(sys.argv[2])
print(f"{'attention (target <= %.1fx flash SDPA)' % TARGET:40} {'fwd ms':>7} {'torch':>7} {'ratio':>6} "
      f"{'bwd ms':>7} {'torch':>7} {'ratio':>6} {'TFLOP/s f/b (ours)':>19}  met")
for shape, o in ours.items():
    t = torch.get(shape)
    if t:
        rf, rb = o["fwd_ms"] / t["fwd_ms"], o["bwd_ms"] / t["bwd_ms"]
        ok = "yes" if rf <= TARGET and rb <= TARGET else "NO"
        print(f"{shape:40} {o['fwd_ms']:7.3f} {t['fwd_ms']:7.3f} {rf:6.2f} {o['bwd_ms']:7.3f} {t['bwd_ms']:7.3f} "
              f"{rb:6.2f} {o['fwd_tflops']:9.0f}/{o['bwd_tflops']:<9.0f}  {ok}")
    else:
        print(f"{shape:40} {o['fwd_ms']:7.3f} {'-':>7} {'-':>6} {o['bwd_ms']:7.3f} {'-':>7} {'-':>6} "
              f"{o['fwd_tflops']:9.0f}/{o['bwd_tflops']:<9.0f}  (no flash: fp32)")

"""The transformer train-step rows side by side: vramlab on cuda:0 and PyTorch eager,
both measured in this run on this GPU (test/gpu/bench.sh).
  python3 bench/torch/step_table.py OURS.json TORCH.json
Target: ratio <= 1.0 (issue 26: every row at most PyTorch eager's time)."""
import json, sys

ours, torch = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
TARGET = 1.0
print(f"{'train step (target <= %.1fx eager)' % TARGET:34} {'ours_ms':>9} {'torch_ms':>9} {'ratio':>6}  met")
for k, t in torch.items():
    o = ours.get(k)
    r = f"{o / t:6.2f}" if o and t else "     -"
    met = ("yes" if o / t <= TARGET else "NO") if o and t else "-"
    print(f"{k:34} {o if o is not None else float('nan'):9.2f} {t:9.2f} {r}  {met}")

"""Sets the twin test's readings (cuda:0 and the simulated GPU, from VRAMLAB_TWIN_OUT)
beside PyTorch's, measured now on the same GPU with the same protocols:
  python3 bench/torch/compare_twin.py twin.jsonl PROTOCOL_DIR
PROTOCOL_DIR holds torch_protocol.py and torch_protocol_finetune.py (measuring tools, not
project code); the MLP measurements with a plain-matmul warm-up use bench/torch/protocol.py.
Prints one line per configuration that is not exact and the counts for both devices."""
import json, os, subprocess, sys, tempfile

twin = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
proto = sys.argv[2]
here = os.path.dirname(os.path.abspath(__file__))
key = lambda s: json.dumps(s, sort_keys=True)
FT = ("weights", "finetune", "shapes", "alloc_conf")

groups = {"matmul": [], "linear": [], "finetune": []}
for t in twin:
    s = t["spec"]
    if t["warmup"] == "matmul": groups["matmul"].append(s)
    elif any(k in s for k in FT) or s.get("mode") == "generate": groups["finetune"].append(s)
    else: groups["linear"].append(s)

torch_readings = {}
with tempfile.TemporaryDirectory() as d:
    procs = []
    for g, specs in groups.items():
        if not specs: continue
        # one spec once: the published and measured files overlap
        uniq = list({key(s): s for s in specs}.values())
        json.dump(uniq, open(f"{d}/{g}.json", "w"))
        if g == "matmul":
            cmd = f"python3 {here}/protocol.py {d}/{g}.json matmul 4 > {d}/{g}.out.json"
        elif g == "linear":
            cmd = f"cd {proto} && python3 torch_protocol.py {d}/{g}.json {d}/{g}.out.json 5 > /dev/null"
        else:
            cmd = f"cd {proto} && python3 torch_protocol_finetune.py {d}/{g}.json {d}/{g}.out.json 4 > /dev/null"
        procs.append((g, subprocess.Popen(cmd, shell=True)))
    for g, p in procs:
        p.wait()
        for r in json.load(open(f"{d}/{g}.out.json"))["runs"]:
            if r.get("readings"): torch_readings[key(r["spec"])] = r["readings"]

def verdict(ours, torch):
    worst, exact = 0.0, True
    for k, v in torch.items():
        o = ours.get(k)
        if o is None: return "missing", k
        if o != v:
            exact = False
            worst = max(worst, abs(o - v) / max(0.01 * v, 2 * 2**20))
    return ("exact" if exact else "within" if worst <= 1 else "off"), worst

counts = {"cuda": {}, "sim": {}}
for t in twin:
    torch = torch_readings.get(key(t["spec"]))
    if torch is None:
        print("no PyTorch reading for", key(t["spec"])[:150]); continue
    for dev in ("cuda", "sim"):
        v, w = verdict(t[dev], torch)
        counts[dev][v] = counts[dev].get(v, 0) + 1
        if v != "exact":
            diffs = " ".join(f"{k}:{(t[dev].get(k, 0) - x) / 2**20:+.3f}MiB" for k, x in torch.items() if t[dev].get(k) != x)
            print(f"{dev:4} {v:7} {key(t['spec'])[:140]} {diffs}")
print("same-run PyTorch comparison on", subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
      capture_output=True, text=True).stdout.strip())
for dev in ("cuda", "sim"):
    print(f"  {dev}: " + ", ".join(f"{n} {v}" for v, n in sorted(counts[dev].items())) + f" (of {sum(counts[dev].values())})")

"""Records PyTorch's allocator trace while a protocol spec runs, for finding where the
engine's allocation sequence departs from PyTorch's. Runs on the GPU machine:
  python3 trace_protocol.py PROTOCOL_DIR SPEC_JSON OUT.pickle [python|all]
PROTOCOL_DIR holds the reference protocol scripts (torch_protocol.py and
torch_protocol_finetune.py, not part of this project). History is on from process start,
so the trace holds the warm-up too; the readings go into the pickle under "readings"."""
import json, os, pickle, sys

proto_dir, spec, out = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]
stacks = sys.argv[4] if len(sys.argv) > 4 else "python"
sys.path.insert(0, proto_dir)
import torch
os.environ.setdefault("PYTORCH_CUDA_ALLOC_CONF", spec.get("alloc_conf", ""))
torch.cuda.memory._record_memory_history(enabled="all", context="all", stacks=stacks, max_entries=2_000_000)
finetune = any(k in spec for k in ("weights", "finetune", "shapes", "alloc_conf")) or spec.get("mode") == "generate"
if finetune:
    import torch_protocol_finetune as P
    res = P.one(spec)
else:
    import torch_protocol as P
    res = P.one(spec)
snap = torch.cuda.memory._snapshot()
snap["readings"] = res
with open(out, "wb") as f:
    pickle.dump(snap, f)
print(json.dumps(res)[:400])

#!/usr/bin/env bash
# PyTorch side of the transformer parity work, on the GPU machine (one command):
#   bash bench/torch/measure_transformers.sh REFS_DIR
# REFS_DIR holds the reference protocol scripts (torch_protocol.py, torch_protocol_finetune.py,
# transformer_reference.json); they are measuring tools, carried along, not project code.
# Writes under $OUT: overhead.json (memory outside PyTorch's allocator), m_train.json and
# m_finetune.json (readings of bench/torch/transformer_specs.json), traces.tar.xz (allocator
# traces of the published configurations).
set -uo pipefail
R=$(cd "$1" && pwd); OUT=${OUT:-/tmp/measure}; mkdir -p "$OUT"; here=$(cd "$(dirname "$0")" && pwd)
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
python3 "$here/context_overhead.py" > "$OUT/overhead.json" || echo "overhead failed"
python3 - "$here/transformer_specs.json" "$R/transformer_reference.json" /tmp/specs <<'PY'
import json, sys, os
s = json.load(open(sys.argv[1])); ref = json.load(open(sys.argv[2])); d = sys.argv[3]; os.makedirs(d, exist_ok=True)
json.dump(s["train"], open(f"{d}/train.json", "w")); json.dump(s["finetune"], open(f"{d}/finetune.json", "w"))
pub = [r["spec"] for r in ref["transformers"]] + [r["spec"] for r in ref["finetune_and_generate"]] + [r["spec"] for r in ref["variable_shapes"]]
json.dump(pub, open(f"{d}/published.json", "w"))
PY
(cd "$R" && python3 torch_protocol.py /tmp/specs/train.json "$OUT/m_train.json" 6 2>&1 | tail -5) &
(cd "$R" && python3 torch_protocol_finetune.py /tmp/specs/finetune.json "$OUT/m_finetune.json" 4 2>&1 | tail -5) &
wait
mkdir -p /tmp/traces
python3 - /tmp/specs/published.json <<'PY' > /tmp/trace_cmds.txt
import json, sys
for i, s in enumerate(json.load(open(sys.argv[1]))): print(i, json.dumps(s))
PY
while read -r i spec; do
  echo "python3 $here/trace_protocol.py $R '$spec' /tmp/traces/pub$i.pickle python"
done < /tmp/trace_cmds.txt > /tmp/trace_jobs.sh
echo "python3 $here/trace_protocol.py $R '{\"model\":{\"kind\":\"gpt\",\"vocab\":1003,\"seq\":100,\"dim\":192,\"depth\":1,\"heads\":3},\"batch\":2,\"optimizer\":\"adamw\",\"precision\":\"fp32\"}' /tmp/traces/cpp_gpt_fp32.pickle all" >> /tmp/trace_jobs.sh
echo "python3 $here/trace_protocol.py $R '{\"model\":{\"kind\":\"llama\",\"vocab\":1003,\"seq\":100,\"dim\":192,\"depth\":1,\"heads\":3,\"kv_heads\":1,\"ffn\":512},\"batch\":2,\"optimizer\":\"adamw\",\"precision\":\"bf16\"}' /tmp/traces/cpp_llama_bf16.pickle all" >> /tmp/trace_jobs.sh
xargs -P 5 -I{} -d '\n' timeout 300 bash -c {} < /tmp/trace_jobs.sh 2>&1 | cut -c1-200
(cd /tmp/traces && ls -la && tar cf - *.pickle | xz -T8 -6 > "$OUT/traces.tar.xz")
ls -la "$OUT"

#!/usr/bin/env bash
# On the GPU machine: export a replay and a run as PyTorch snapshots and render them with
# PyTorch's own viewer (torch.cuda._memory_viz).
set -uo pipefail

node() { bash .gpu/on-gpu.sh node "$@"; }
node bin/vramlab.js snapshot export --from-replay test/fixtures/torch/mlp_adam.pickle -o /tmp/ours_replay.pickle
python3 -m torch.cuda._memory_viz trace_plot /tmp/ours_replay.pickle -o "/tmp/gpu-ours_replay.html" && echo "trace_plot replay: ok ($(wc -c < "/tmp/gpu-ours_replay.html") bytes)"
python3 -m torch.cuda._memory_viz segment_plot /tmp/ours_replay.pickle -o /tmp/ours_segments.html && echo "segment_plot replay: ok"
printf '{"model":{"kind":"mlp","in":1024,"hidden":2048,"depth":2,"out":10},"batch":256,"optimizer":"adam","device":"cuda:0","history":true}' > /tmp/spec.json
node bin/vramlab.js run /tmp/spec.json --json > "/tmp/gpu-run_cuda.json"; echo "vramlab run on cuda:0: rc=$?"; head -c 1500 "/tmp/gpu-run_cuda.json"; echo
id=$(python3 -c "import json;print(json.load(open('/tmp/gpu-run_cuda.json')).get('id',''))")
if [ -n "$id" ]; then
  node bin/vramlab.js snapshot export "$id" -o /tmp/ours_run.pickle
  python3 -m torch.cuda._memory_viz trace_plot /tmp/ours_run.pickle -o "/tmp/gpu-ours_run.html" && echo "trace_plot run: ok ($(wc -c < "/tmp/gpu-ours_run.html") bytes)"
  python3 - <<'PY'
import pickle
d = pickle.load(open('/tmp/ours_run.pickle', 'rb'))
tr = d['device_traces'][0]
print('run export: segments', len(d['segments']), 'trace events', len(tr), 'alloc events', sum(e['action'] == 'alloc' for e in tr))
PY
fi

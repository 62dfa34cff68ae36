#!/usr/bin/env bash
# Data-parallel training for real through NCCL on the two-GPU machine, one command:
#   bash test/gpu/nccl.sh [PAYLOAD]   (PAYLOAD: vramlab_dist and vramlab_tests built with
#                                      CUDA on the CPU machine; default .gpu/payload)
# World 2 on cuda:0/cuda:1: the published DDP configurations of test/refs/dist_reference.json
# (GPT fp32, GPT-2 124M bf16 autocast, Llama SGD bf16 with 10 MB buckets), each rank beside
# its simulated twin, losses and final parameters across ranks, NCCL's footprint per rank
# with NCCL's defaults and with NCCL_RUNTIME_CONNECT=0; GPT with gradient_as_bucket_view too.
# Each configuration's table and JSON under $OUT (at most 8 files: what the lent machine returns).
set -uo pipefail
P=${1:-.gpu/payload}
OUT=${OUT:-/tmp/vramlab-nccl}; mkdir -p "$OUT"
# NVLink multicast stays off on shared hosts (it can take the host's GPUs out of service).
export NCCL_NVLS_ENABLE=0
nccl_lib=$(python3 -c "import nvidia.nccl, os; print(os.path.dirname(nvidia.nccl.__file__) + '/lib')" 2>/dev/null ||
  dirname "$(python3 -c "import site; print(site.getsitepackages()[0])")/nvidia/nccl/lib/x")
export LD_LIBRARY_PATH=$nccl_lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
# the binaries complete partial specs with test/fixtures/spec_defaults.json where they were built
src=${VRAMLAB_BUILT_AT:-/work/main}
if [ ! -e "$src" ]; then mkdir -p "$(dirname "$src")" && ln -s "$PWD" "$src"; fi
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv,noheader
ls "$nccl_lib" | head -3

specs=$(python3 -c "
import json
for i, r in enumerate(json.load(open('test/refs/dist_reference.json'))['runs']):
    if r['spec']['parallel']['kind'] == 'ddp': print(i, json.dumps({**r['spec'], 'device': 'cuda:0'}))
    if i == 6: print('6v', json.dumps({**r['spec'], 'device': 'cuda:0',
                                      'parallel': {**r['spec']['parallel'], 'gradient_as_bucket_view': True}}))
")
summary=""
while read -r n spec; do
  echo; echo "=== DDP run $n: $spec"
  timeout 80 "$P/vramlab_dist" "$spec" --timeout 70 --out "$OUT/ddp_run$n.json" > "$OUT/ddp_run$n.txt" 2>&1
  rc=$?
  tail -16 "$OUT/ddp_run$n.txt"
  summary+="run $n: exit $rc; $(grep -E '^readings equal' "$OUT/ddp_run$n.txt" | tr -d '\n'); $(grep -E '^losses equal' "$OUT/ddp_run$n.txt")"$'\n'
  first=${first:-$spec}
done <<< "$specs"

echo; echo "=== NCCL_RUNTIME_CONNECT=0 (every connection at init)"
NCCL_RUNTIME_CONNECT=0 timeout 60 "$P/vramlab_dist" "$first" --timeout 50 > /tmp/ddp_rc0.txt 2>&1
echo "exit $?"; grep -A4 "^NCCL footprint" /tmp/ddp_rc0.txt; grep -E "^readings equal|^losses equal" /tmp/ddp_rc0.txt

echo "=== native tests (NCCL loader, rank processes, two ranks on two GPUs)"
timeout 60 "$P/vramlab_tests" --gtest_filter='*Nccl*:RunnerDistLaunch*' > /tmp/gtest.txt 2>&1
grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[       OK|could not be loaded|needs two|Failure|Expected|Which is|rank " /tmp/gtest.txt | head -40

echo; echo "=== summary"
grep -E "^\[  (PASSED|FAILED|SKIPPED) " /tmp/gtest.txt
printf "%s" "$summary"
grep -h -A4 "^NCCL footprint" "$OUT"/ddp_run*.txt | head -5

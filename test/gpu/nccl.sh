#!/usr/bin/env bash
# Data-parallel training for real through NCCL on the two-GPU machine, one command:
#   bash test/gpu/nccl.sh [PAYLOAD] [fsdp|ddp|all]
#     PAYLOAD: vramlab_dist and vramlab_tests built with CUDA on the CPU machine (default
#     .gpu/payload); the second argument picks the configurations (default all).
# World 2 on cuda:0/cuda:1, each rank beside its simulated twin, losses and final
# parameters across ranks:
# - fsdp: the FSDP2 runs of test/refs/dist_reference.json that PyTorch completed (GPT fp32;
#   bf16 params with fp32 reduce, with and without resharding after forward; GPT-2 124M
#   checkpointed; Llama bf16 params; GPT fp32 with vocab 8191, whose rows split unevenly),
#   each also beside one GPU training the same batch
#   (FSDP2 at world 1, and without FSDP2 where the policy casts nothing);
# - ddp: the published DDP runs (GPT fp32, GPT-2 124M bf16 autocast, Llama SGD bf16 with
#   10 MB buckets), GPT with gradient_as_bucket_view too;
# - NCCL's footprint per rank with NCCL's defaults and with NCCL_RUNTIME_CONNECT=0.
# Each configuration's table and JSON under $OUT (at most 8 files: what the lent machine
# returns; the JSON of every run goes into one file, runs.json). DDP runs go last and are
# skipped once the script has run DDP_UNTIL_S seconds (unset: never).
set -uo pipefail
P=${1:-.gpu/payload}
WHICH=${2:-all}
OUT=${OUT:-/tmp/vramlab-nccl}; mkdir -p "$OUT"
W=$(mktemp -d)
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

specs=$(WHICH=$WHICH python3 -c "
import json, os
which = os.environ['WHICH']
for i, r in enumerate(json.load(open('test/refs/dist_reference.json'))['runs']):
    kind = r['spec']['parallel']['kind']
    if r.get('error'): continue  # PyTorch failed this launch (the checkpointed Llama)
    if kind == 'fsdp2' and which in ('fsdp', 'all'):
        print('fsdp' + str(i), json.dumps({**r['spec'], 'device': 'cuda:0'}))
        if i == 0:  # rows that do not split evenly: padded shards, rank 1 holds fewer rows
            print('fsdp0u', json.dumps({**r['spec'], 'device': 'cuda:0', 'model': {**r['spec']['model'], 'vocab': 8191}}))
    if kind == 'ddp' and which in ('ddp', 'all'):
        print('ddp' + str(i), json.dumps({**r['spec'], 'device': 'cuda:0'}))
        if i == 6: print('ddp6v', json.dumps({**r['spec'], 'device': 'cuda:0',
                                             'parallel': {**r['spec']['parallel'], 'gradient_as_bucket_view': True}}))
")
summary=""
# one configuration: its table to stdout and tables.txt, its JSON into runs.json (rewritten
# after each run, so a cut-off call still returns what ran)
one() {
  local n=$1 spec=$2
  echo; echo "=== $n: $spec"
  timeout 75 "$P/vramlab_dist" "$spec" --timeout 60 --out "$W/$n.json" > "$W/$n.txt" 2>&1
  local rc=$?
  tail -24 "$W/$n.txt"
  cat "$W/$n.txt" >> "$OUT/tables.txt"
  summary+="$n: exit $rc; $(grep -E '^readings equal' "$W/$n.txt" | tr -d '\n'); $(grep -E '^losses equal' "$W/$n.txt" | tr -d '\n'); $(grep -E 'rank 0 vs one GPU' "$W/$n.txt" | tr -d '\n')"$'\n'
  python3 -c "
import json, glob, os, sys
runs = {}
for f in sorted(glob.glob('$W/*.json')):
    try: runs[os.path.basename(f)[:-5]] = json.load(open(f))
    except Exception as e: print('unreadable', f, e, file=sys.stderr)
json.dump(runs, open('$OUT/runs.json', 'w'))
"
}
first=""
while read -r n spec; do
  [ -z "$n" ] && continue
  case $n in ddp*) continue ;; esac
  one "$n" "$spec"
  first=${first:-$spec}
done <<< "$specs"
echo; echo "=== NCCL_RUNTIME_CONNECT=0 (every connection at init)"
first=${first:-$(sed -n 1p <<< "$specs" | cut -d' ' -f2-)}
NCCL_RUNTIME_CONNECT=0 timeout 60 "$P/vramlab_dist" "$first" --timeout 50 > "$OUT/rc0.txt" 2>&1
echo "exit $?"; grep -A4 "^NCCL footprint" "$OUT/rc0.txt"; grep -E "^readings equal|^losses equal" "$OUT/rc0.txt"

echo "=== native tests (NCCL loader, rank processes, two ranks on two GPUs)"
timeout 90 "$P/vramlab_tests" --gtest_filter='*Nccl*:RunnerDistLaunch*' > "$OUT/gtest.txt" 2>&1
grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[       OK|could not be loaded|needs two|Failure|Expected|Which is|rank " "$OUT/gtest.txt" | head -40

# DDP last (the FSDP2 runs, the footprint and the tests come back first if time runs short)
while read -r n spec; do
  case $n in ddp*) ;; *) continue ;; esac
  if [ "$SECONDS" -gt "${DDP_UNTIL_S:-100000}" ]; then echo "skipped $n (time)"; continue; fi
  one "$n" "$spec"
done <<< "$specs"

echo; echo "=== summary"
grep -E "^\[  (PASSED|FAILED|SKIPPED) " "$OUT/gtest.txt"
printf "%s" "$summary"
grep -h -A4 "^NCCL footprint" "$W"/*.txt | head -5

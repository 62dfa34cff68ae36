#!/usr/bin/env bash
# The whole GPU check in one command, for the lent GPU machine (see ../shared/gpu/README.md):
#   bash test/gpu/run.sh      (with .gpu/ carried: Node, and .gpu/payload/ holding the CUDA
#                              build: vramlab.node, vramlab_tests, vramlab_bench_* and dist/)
# Writes logs under $OUT and prints a short table last.
set -uo pipefail
OUT=${OUT:-/tmp/vramlab-gpu}; mkdir -p "$OUT"
P=.gpu/payload
export VRAMLAB_ADDON=$PWD/$P/vramlab.node VRAMLAB_SOURCE_DIR=$PWD VRAMLAB_HOME=/tmp/vramlab-home
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
node() { bash .gpu/on-gpu.sh node "$@"; }
step() { echo; echo "=== $1"; }
exec > >(tee "$OUT/gpu_log.txt") 2>&1

step "GPU"; nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "/tmp/gpu-gpu.txt"
step "vramlab devices"; node bin/vramlab.js devices | tee "/tmp/gpu-devices.txt"
step "native GPU tests"
if [ -x $P/vramlab_tests ]; then
  $P/vramlab_tests --gtest_filter='*Cuda*:*CUDA*:*Gpu*:*GPU*:*Foreach*' --gtest_brief=1 2>&1 | tee "/tmp/gpu-gtest_gpu.txt" | tail -25
fi
if [ "${SKIP_ALLOC_BENCH:-0}" != 1 ]; then
  if [ -x $P/vramlab_bench_allocator ]; then step "allocator bench (ours)"; $P/vramlab_bench_allocator 2>&1 | tee "/tmp/gpu-bench_allocator.txt"; fi
  if [ -f bench/allocator/torch_raw_alloc.py ]; then step "PyTorch raw_alloc"; python3 bench/allocator/torch_raw_alloc.py 2>&1 | tee "/tmp/gpu-bench_torch_alloc.txt" | tail -12; fi
fi
if [ -f test/gpu/engine_gpu.mjs ]; then step "engine parity on cuda:0"; node test/gpu/engine_gpu.mjs 2>&1 | grep -v -E "\texact$"; fi
if [ -x $P/vramlab_bench_train_step ]; then step "train step (ours, cuda:0)"; $P/vramlab_bench_train_step --device cuda:0 --variant new,old,nolt 2>&1 | tee "/tmp/gpu-bench_train_step.txt"; fi
if [ -f test/gpu/snapshot_viz.sh ]; then step "snapshot export in PyTorch's viewer"; bash test/gpu/snapshot_viz.sh 2>&1; fi
step "PyTorch train step (ms)"; python3 bench/torch/train_step.py 2>&1
if [ -f bench/torch/train_step_phases.py ]; then step "PyTorch train step phases"; (cd bench/torch && python3 train_step_phases.py) 2>&1 | tail -20; fi
step "playground session on cuda:0"
node -e "
const a = require(process.env.VRAMLAB_ADDON);
const s = new a.Session({ device: 'cuda:0' });
const x = s.randn([1000, 1000]); console.log('randn(1000,1000): allocated', s.memoryAllocated(), 'reserved', s.memoryReserved());
const y = s.view(x, [-1]); const z = s.clone(x); console.log('view + clone: allocated', s.memoryAllocated());
s.del(x); s.del(y); s.del(z); s.emptyCache(); console.log('after del + empty_cache: allocated', s.memoryAllocated(), 'reserved', s.memoryReserved());
s.close();
" 2>&1

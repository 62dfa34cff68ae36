#!/usr/bin/env bash
# The CUDA twin check on the lent GPU machine, one command (../shared/gpu/README.md):
#   bash test/gpu/twin.sh     (.gpu/payload holds vramlab_tests and vramlab_bench_train_step
#                              built here with CUDA; .gpu/refs the PyTorch protocol scripts)
# cuda:0 against the simulated GPU for every measured configuration, the transformer
# kernels against the float64 reference, 200-step training, then PyTorch on the same
# configurations in the same session (benchmarks: test/gpu/bench.sh).
set -uo pipefail
OUT=${OUT:-/tmp/vramlab-twin}; mkdir -p "$OUT"
P=.gpu/payload
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
# the test binary reads test/refs where it was built (VRAMLAB_BUILT_AT, default /work/main)
src=${VRAMLAB_BUILT_AT:-/work/main}
if [ ! -e "$src" ]; then mkdir -p "$(dirname "$src")" && ln -s "$PWD" "$src"; fi
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
echo "=== native GPU tests (twin, transformer kernels, training)"
VRAMLAB_TWIN_OUT=$OUT/twin.jsonl timeout ${GTEST_TIMEOUT:-300} $P/vramlab_tests --gtest_filter='*Cuda*:*CUDA*:VaLayout*' > "$OUT/gtest.txt" 2>&1
grep -E "^\[  (PASSED|FAILED|SKIPPED)|twin on|loss |differ|Failure" "$OUT/gtest.txt" | head -60
echo "=== PyTorch on the same configurations, same session"
timeout ${COMPARE_TIMEOUT:-280} python3 bench/torch/compare_twin.py "$OUT/twin.jsonl" .gpu/refs 2>&1 | tee "$OUT/compare.txt" | tail -40

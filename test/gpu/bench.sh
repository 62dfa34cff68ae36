#!/usr/bin/env bash
# Every benchmark row beside PyTorch, measured in this run on this GPU (the lent GPU
# machine, ../shared/gpu/README.md):   bash test/gpu/bench.sh
# .gpu/payload holds vramlab_bench_allocator, vramlab_bench_train_step and
# vramlab_bench_transformer_step built here with CUDA; .gpu/refs the PyTorch protocol
# scripts (measuring tools kept outside the project; the transformer rows use its models).
set -uo pipefail
OUT=${OUT:-/tmp/vramlab-bench}; mkdir -p "$OUT"
P=.gpu/payload
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
src=${VRAMLAB_BUILT_AT:-/work/main}  # the benches read fixtures where they were built
if [ ! -e "$src" ]; then mkdir -p "$(dirname "$src")" && ln -s "$PWD" "$src"; fi
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
echo "=== allocator: PyTorch raw_alloc/raw_delete, then vramlab, same GPU"
python3 bench/allocator/torch_raw_alloc.py 200000 --json "$OUT/torch_alloc.json" > "$OUT/torch_alloc.txt" 2>&1 || tail -5 "$OUT/torch_alloc.txt"
$P/vramlab_bench_allocator 200000 "$OUT/torch_alloc.json" 2>&1 | tee "$OUT/bench_allocator.txt"
echo "=== train step, MLP/residual rows: PyTorch, then vramlab on cuda:0"
python3 bench/torch/train_step.py > "$OUT/torch_step.json" 2>"$OUT/torch_step.err" || tail -5 "$OUT/torch_step.err"
$P/vramlab_bench_train_step --device cuda:0 --torch "$OUT/torch_step.json" 2>&1 | tee "$OUT/bench_train_step.txt"
echo "=== train step, transformer rows (bf16, AdamW, cross-entropy)"
python3 bench/torch/train_step.py --transformers .gpu/refs > "$OUT/torch_transformer.json" 2>"$OUT/torch_transformer.err" || tail -5 "$OUT/torch_transformer.err"
$P/vramlab_bench_transformer_step --device cuda:0 > "$OUT/ours_transformer.json" 2>"$OUT/ours_transformer.err" || tail -5 "$OUT/ours_transformer.err"
python3 bench/torch/step_table.py "$OUT/ours_transformer.json" "$OUT/torch_transformer.json" | tee "$OUT/transformer_table.txt"
echo "=== attention kernels alone (GPT-2 small layer: 8 x 12 heads x 1024 x 64, causal)"
for a in "8 12 1024 64 bf16 1" "8 12 1024 64 f32 1" "4 16 1024 128 bf16 1"; do
  $P/vramlab_bench_attention $a 2>&1 | tee -a "$OUT/bench_attention.txt"
done
echo "=== device memory outside PyTorch (the presets' context figure), fresh process"
python3 bench/torch/context_overhead.py > "$OUT/context.json" 2>&1; cat "$OUT/context.json"

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
echo "=== allocator: PyTorch raw_alloc/raw_delete, then vramlab, same GPU (target: cuda:0 rows <= 0.5x)"
python3 bench/allocator/torch_raw_alloc.py 200000 --json "$OUT/torch_alloc.json" > "$OUT/torch_alloc.txt" 2>&1 || tail -5 "$OUT/torch_alloc.txt"
$P/vramlab_bench_allocator 200000 "$OUT/torch_alloc.json" 2>&1 | tee "$OUT/bench_allocator.txt"
echo "=== train step, MLP/residual rows: PyTorch, then vramlab on cuda:0"
python3 bench/torch/train_step.py > "$OUT/torch_step.json" 2>"$OUT/torch_step.err" || tail -5 "$OUT/torch_step.err"
$P/vramlab_bench_train_step --device cuda:0 --torch "$OUT/torch_step.json" 2>&1 | tee "$OUT/bench_train_step.txt"
echo "=== train step, transformer rows (bf16, AdamW, cross-entropy; target <= 1.0x PyTorch eager)"
python3 bench/torch/train_step.py --transformers .gpu/refs > "$OUT/torch_transformer.json" 2>"$OUT/torch_transformer.err" || tail -5 "$OUT/torch_transformer.err"
$P/vramlab_bench_transformer_step --device cuda:0 > "$OUT/ours_transformer.json" 2>"$OUT/ours_transformer.err" || tail -5 "$OUT/ours_transformer.err"
python3 bench/torch/step_table.py "$OUT/ours_transformer.json" "$OUT/torch_transformer.json" | tee "$OUT/transformer_table.txt"
echo "=== attention alone: vramlab's kernels vs PyTorch's flash SDPA, same shapes (target <= 1.2x)"
: > "$OUT/ours_attention.jsonl"; : > "$OUT/torch_attention.jsonl"
for a in "8 12 1024 64 bf16 1" "8 12 1024 64 f16 1" "4 16 2048 128 bf16 1" "4 16 2048 128 f16 1" \
         "1 32 4096 128 bf16 1" "1 32 4096 64 bf16 1" "8 12 1024 64 f32 1"; do
  $P/vramlab_bench_attention $a >> "$OUT/ours_attention.jsonl" 2>&1
  case "$a" in *f32*) ;; *) python3 bench/torch/attention.py $a >> "$OUT/torch_attention.jsonl" 2>&1 ;; esac
done
python3 bench/torch/attention_table.py "$OUT/ours_attention.jsonl" "$OUT/torch_attention.jsonl" | tee "$OUT/attention_table.txt"
echo "=== device memory outside PyTorch (the presets' context figure), fresh process"
python3 bench/torch/context_overhead.py > "$OUT/context.json" 2>&1; cat "$OUT/context.json"

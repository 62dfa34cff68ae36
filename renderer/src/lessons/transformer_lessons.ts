// Guided experiments on transformer training memory: where a GPT step's memory goes, what
// grouped-query attention changes, what checkpointing saves in a transformer, and why
// varying lengths make reserved memory creep. The
// figures in the text are the engine's (simulated H100, PyTorch 2.11's behaviour).
import type { Lesson } from './lesson';

const H100 = 'sim:h100-80gb';
const GPT2 = { kind: 'gpt', vocab: 50257, seq: 1024, dim: 768, depth: 12, heads: 12 } as const;
const DRAWN = { batch: 8, steps: 100, seed: 1, seq: { min: 64, max: 1024 } };
const TINYLLAMA = { kind: 'llama', vocab: 32000, seq: 2048, dim: 2048, depth: 22, heads: 32, ffn: 5632 } as const;

export function transformerLessons(): Lesson[] {
  return [
    {
      id: 'transformer-memory',
      title: "Where a GPT training step's memory goes",
      goal: 'Split a GPT-2 step into weights, optimizer state, attention, MLP and the logits, and see which knob moves which band.',
      steps: [
        {
          text: 'GPT-2 small (124M parameters), batch 8 x 1024 tokens, bf16 autocast, Adam. Switch the chart to "by category". The peak is about 6.5 GiB over the baseline; at that moment the MLP activations hold about 1.4 GiB, attention about 0.8 GiB and the bf16 logits (8 x 1024 x 50257) about 0.85 GiB.',
          action: {
            kind: 'experiment',
            spec: { model: GPT2, batch: 8, precision: 'bf16', optimizer: 'adam', device: H100, history: true },
            label: 'Run GPT-2 small',
          },
        },
        {
          text: 'Look at the activation gradients band at the peak: about 1.5 GiB, three times the weights, while the parameter gradients band is still empty (the peak comes as backward starts). It is the gradient of the logits, batch x seq x vocab in fp32. Cut the vocabulary to 8192: that gradient drops to 256 MiB, the logits band to about 150 MiB, and the peak by about 2.3 GiB, with the same blocks.',
          action: {
            kind: 'experiment',
            spec: { model: { ...GPT2, vocab: 8192 }, batch: 8, precision: 'bf16', optimizer: 'adam', device: H100, history: true },
            label: 'Run with vocab 8192',
          },
        },
        {
          text: 'Long context: batch 2 x 4096 tokens, the same 8192 tokens per step. The attention band stays at about 0.8 GiB and the peak moves by a few tens of MiB (the larger position table): the fused attention kernels never build the seq x seq score matrix, so attention memory grows with the number of tokens, not with seq squared.',
          action: {
            kind: 'experiment',
            spec: { model: { ...GPT2, seq: 4096 }, batch: 2, precision: 'bf16', optimizer: 'adam', device: H100, history: true },
            label: 'Run 2 x 4096 tokens',
          },
        },
      ],
      look: [
        'The stacked view at the peak (end of the forward pass / start of backward): logits, attention, MLP.',
        'The attention backend in the run summary: cuDNN for bf16, memory-efficient for fp32 on an H100.',
      ],
      check: {
        question: 'A GPT step at a 128k vocabulary runs out of memory at the start of backward. Which tensor is the likely culprit?',
        options: [
          'The attention score matrix',
          'The logits and their fp32 gradient (batch x seq x vocab)',
          "Adam's state",
          'The position embedding',
        ],
        answer: 1,
        explanation:
          "The output layer makes batch x seq x vocab logits, and the loss's backward makes an fp32 gradient of the same shape. At large vocabularies these outgrow every block's activations; chunked or fused cross-entropy avoids materializing them.",
      },
    },
    {
      id: 'grouped-query-attention',
      title: 'What grouped-query attention changes',
      goal: 'See what sharing keys and values between heads saves in training, and in the KV cache of generation.',
      steps: [
        {
          text: 'A TinyLlama-shaped model (1.1B with 32 key/value heads, i.e. no grouping), batch 2 x 2048 tokens, bf16, SGD. Peak about 17.7 GiB over the baseline.',
          action: {
            kind: 'experiment',
            spec: { model: { ...TINYLLAMA, kv_heads: 32 }, batch: 2, precision: 'bf16', optimizer: 'sgd', device: H100, history: true },
            label: 'Run with 32 kv heads',
          },
        },
        {
          text: 'The real TinyLlama shares each key/value head among 8 query heads (kv_heads 4). Training saves only about 0.9 GiB: 616 MiB of smaller k and v projection weights, and about 300 MiB of attention activations. The saving is small because k and v are repeated to all 32 heads (`repeat_interleave`) before attention, and those copies are saved for backward.',
          action: {
            kind: 'experiment',
            spec: { model: { ...TINYLLAMA, kv_heads: 4 }, batch: 2, precision: 'bf16', optimizer: 'sgd', device: H100, history: true },
            label: 'Run with 4 kv heads',
          },
        },
        {
          text: 'Where it pays is generation: the KV cache keeps k and v before the repeat. Batch 8, a 1024-token prompt and 256 new tokens with a static cache: the cache is 1.72 GiB with 32 kv heads (after the run, memory over the weights is exactly the cache)...',
          action: {
            kind: 'experiment',
            spec: {
              model: { ...TINYLLAMA, kv_heads: 32 },
              batch: 8,
              precision: 'bf16',
              mode: 'generate',
              prompt: 1024,
              new_tokens: 256,
              cache: 'static',
              device: H100,
              history: true,
            },
            label: 'Generate with 32 kv heads',
          },
        },
        {
          text: '...and 220 MiB with 4: one eighth, because the cache holds kv_heads, not heads. That is what lets a server hold eight times the batch or the context.',
          action: {
            kind: 'experiment',
            spec: {
              model: { ...TINYLLAMA, kv_heads: 4 },
              batch: 8,
              precision: 'bf16',
              mode: 'generate',
              prompt: 1024,
              new_tokens: 256,
              cache: 'static',
              device: H100,
              history: true,
            },
            label: 'Generate with 4 kv heads',
          },
        },
      ],
      look: [
        'The KV cache band in the generation runs, and `after_generate` minus `params` in the readings.',
        'The attention band in the two training runs.',
      ],
      check: {
        question: 'Going from 32 to 4 key/value heads, which memory shrinks by 8x?',
        options: ['Training activations', 'The KV cache during generation', 'The weights', 'The logits'],
        answer: 1,
        explanation:
          'The cache stores k and v per kv head, so it scales with kv_heads. In training, k and v are repeated to every query head before attention and saved that way, so activations barely change; only the k and v projection weights shrink.',
      },
    },
    {
      id: 'transformer-checkpointing',
      title: 'Checkpointing a transformer vs the MLP lesson',
      goal: 'See checkpointing pay off in a transformer, where activations dominate, unlike the residual stack where the peak did not move.',
      steps: [
        {
          text: 'GPT-2 small, batch 8 x 1024, bf16, Adam, no checkpointing: about 4.05 GiB after the forward pass and a peak of about 6.5 GiB.',
          action: {
            kind: 'experiment',
            spec: { model: GPT2, batch: 8, precision: 'bf16', optimizer: 'adam', checkpoint: 'none', device: H100, history: true },
            label: 'Run without checkpointing',
          },
        },
        {
          text: 'Checkpoint every block: each block keeps only its input, and after the forward pass about 1.6 GiB are left. The peak drops by about 2.4 GiB, to about 4.1 GiB: here activations are most of the peak, so recomputing them pays, unlike the residual lesson where the gradients set the peak.',
          action: {
            kind: 'experiment',
            spec: { model: GPT2, batch: 8, precision: 'bf16', optimizer: 'adam', checkpoint: 'block', device: H100, history: true },
            label: 'Checkpoint every block',
          },
        },
        {
          text: "sqrt(n): 12 blocks in segments of 4 keep only 3 segment inputs, and the peak goes a little lower still (about 3.9 GiB). What stays is what checkpointing cannot touch: the weights, Adam's state, and the logits with their gradient at the start of backward.",
          action: {
            kind: 'experiment',
            spec: { model: GPT2, batch: 8, precision: 'bf16', optimizer: 'adam', checkpoint: 'sqrt', device: H100, history: true },
            label: 'Checkpoint sqrt(n) segments',
          },
        },
      ],
      look: [
        "`after_forward` in the three runs' readings.",
        'The recomputation inside the backward band: one block (or segment) re-runs its forward before its backward.',
      ],
      check: {
        question: "Why does per-block checkpointing lower a GPT's peak when it did not lower the small residual stack's?",
        options: [
          'GPT blocks are checkpointed differently',
          'In the GPT step, saved activations are a large share of the peak; in the residual example the gradients were',
          'bf16 makes checkpointing work',
          'The GPT has fewer parameters',
        ],
        answer: 1,
        explanation:
          'Checkpointing trades saved activations for recomputation. It lowers the peak only when activations are what the peak is made of: long sequences, wide blocks and large batches, as in transformer training.',
      },
    },
    {
      id: 'varying-lengths',
      title: 'Varying lengths: why reserved memory creeps, and the OOM hours in',
      goal: 'See a training job on batches of varying length reserve more than one that always runs the longest, and what the usual fixes do about it.',
      steps: [
        {
          text: 'GPT-2 small, batch 8, every step at the full 1024 tokens, bf16, AdamW. Open the readings: `reserved_peak` is about 7.2 GiB (7356 MiB).',
          action: {
            kind: 'experiment',
            spec: { model: GPT2, batch: 8, precision: 'bf16', optimizer: 'adamw', device: H100, history: true },
            label: 'Run at a fixed 1024 tokens',
          },
        },
        {
          text: 'Now 100 steps whose lengths are drawn from 64 to 1024 (seed 1): no step is longer than before, yet reserved climbs step after step as new lengths arrive, to about 9.4 GiB (9672 MiB), 2.3 GiB more, in 139 cudaMalloc calls. Each new size needs blocks the cached segments, cut for earlier sizes, cannot serve. On a card with less to spare, this is the OOM that comes hours into a job, the first time the cache meets the wrong length.',
          action: {
            kind: 'experiment',
            spec: { model: GPT2, batch: 8, precision: 'bf16', optimizer: 'adamw', shapes: DRAWN, device: H100, history: true },
            label: 'Run 100 drawn lengths',
          },
        },
        {
          text: 'Sort the same steps longest first: the cache is sized at step 0 for the worst case, every later step fits in it, and reserved stays at about 7.2 GiB (7374 MiB). If it does not fit, you learn at step 0, not hours in.',
          action: {
            kind: 'experiment',
            spec: {
              model: GPT2,
              batch: 8,
              precision: 'bf16',
              optimizer: 'adamw',
              shapes: { ...DRAWN, order: 'longest_first' },
              device: H100,
              history: true,
            },
            label: 'Run longest first',
          },
        },
        {
          text: '`expandable_segments:True` keeps the drawn order and grows one mapped range per stream instead of cutting fixed segments: about 6.5 GiB (6692 MiB), below even the fixed-length run. Compare → Varying lengths runs every usual fix side by side (padding to buckets, packing, `empty_cache()` cadence too).',
          action: {
            kind: 'experiment',
            spec: {
              model: GPT2,
              batch: 8,
              precision: 'bf16',
              optimizer: 'adamw',
              shapes: DRAWN,
              alloc_conf: 'expandable_segments:True',
              device: H100,
              history: true,
            },
            label: 'Run with expandable segments',
          },
        },
      ],
      look: [
        'The reserved line over the run: flat after step 0 at a fixed length, a staircase with drawn lengths.',
        '`reserved_peak`, `reserved_end` and `num_device_alloc` in the readings.',
      ],
      check: {
        question: 'A job trains on lengths up to 1024. Why can it reserve more than a job that always trains at 1024?',
        options: [
          'Shorter batches need more activations',
          'Cached segments cut for earlier sizes cannot serve new ones, so new segments are added while the old stay reserved',
          'The optimizer state grows with every new length',
          'PyTorch never reuses freed memory',
        ],
        answer: 1,
        explanation:
          'The caching allocator keeps freed blocks in their segments and splits them for later requests. A new size that no cached block fits gets a new segment, and the old ones stay reserved; over many sizes the cache fragments. Longest-first, packing, bucketed padding and expandable segments each attack that.',
      },
    },
  ];
}

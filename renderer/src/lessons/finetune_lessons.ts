// Guided experiments on fine-tuning and generation: LoRA vs full fine-tuning, bf16 weights
// vs fp32 master weights, and the KV cache. The figures in the text are the engine's
// (simulated H100, PyTorch 2.11's behaviour).
import type { Lesson } from './lesson';

const H100 = 'sim:h100-80gb';
const MEDIUM = { kind: 'gpt', vocab: 50257, seq: 1024, dim: 1024, depth: 24, heads: 16 } as const;
const GPT2 = { kind: 'gpt', vocab: 50257, seq: 1024, dim: 768, depth: 12, heads: 12 } as const;

export function finetuneLessons(): Lesson[] {
  return [
    {
      id: 'lora-vs-full',
      title: 'LoRA vs full fine-tuning: where the memory goes',
      goal: 'Compare full fine-tuning, frozen blocks and LoRA on GPT-2 medium, band by band.',
      steps: [
        {
          text: "Full fine-tuning of GPT-2 medium (355M parameters), batch 4 x 1024, bf16 autocast, Adam: fp32 weights (1.3 GiB), fp32 gradients and Adam's two fp32 moment buffers (2.6 GiB). Peak about 9.2 GiB over the baseline.",
          action: {
            kind: 'experiment',
            spec: { model: MEDIUM, batch: 4, precision: 'bf16', optimizer: 'adam', device: H100, history: true },
            label: 'Full fine-tuning',
          },
        },
        {
          text: "LoRA, rank 8 on the attention's fused qkv projection: 786,432 trainable parameters. Adam's state is 6 MiB, the weight gradients are gone (the parameter gradients band holds only the adapters'; the activation gradients band is backward passing through the frozen layers), and the optimizer step costs almost nothing. The peak, about 5.6 GiB, is now in forward/backward: activations still flow through every frozen layer, because the adapters' gradients need them.",
          action: {
            kind: 'experiment',
            spec: {
              model: MEDIUM,
              batch: 4,
              precision: 'bf16',
              optimizer: 'adam',
              finetune: { method: 'lora', rank: 8, targets: ['attn'] },
              device: H100,
              history: true,
            },
            label: 'LoRA rank 8 on attn',
          },
        },
        {
          text: "Freezing the embeddings and the first 12 of 24 blocks instead: 151M parameters still train, so Adam's state is about 1.1 GiB, but autograd no longer saves anything for the frozen half, and after the forward pass about 2 GiB less is alive than with full training. Peak about 5.7 GiB.",
          action: {
            kind: 'experiment',
            spec: {
              model: MEDIUM,
              batch: 4,
              precision: 'bf16',
              optimizer: 'adam',
              finetune: { method: 'freeze', blocks: 12 },
              device: H100,
              history: true,
            },
            label: 'Freeze 12 blocks',
          },
        },
      ],
      look: [
        'The parameters line of each run summary: total and trainable.',
        'The optimizer-state band, and the phase peaks: the optimizer step vs backward.',
      ],
      check: {
        question: 'With LoRA, which memory is still about as large as in full fine-tuning?',
        options: [
          "Adam's state",
          'The weight gradients',
          'Activations saved through the frozen layers',
          "The optimizer step's temporaries",
        ],
        answer: 2,
        explanation:
          'LoRA removes gradients and optimizer state for the frozen base, but backward still has to pass through every layer to reach the adapters, so their inputs are saved as in full training. Activations then dominate: shorten sequences, checkpoint, or freeze whole blocks to cut them.',
      },
    },
    {
      id: 'bf16-weights',
      title: 'bf16 weights vs fp32 master weights',
      goal: 'See what storing the model in bf16 (`model.to(torch.bfloat16)`) saves compared with fp32 weights under bf16 autocast, and what it costs.',
      steps: [
        {
          text: "GPT-2 medium, full training, fp32 weights with bf16 autocast (mixed precision): weights 1.3 GiB, Adam's state 2.6 GiB (8 bytes per parameter), and autocast's bf16 copies of the weights during forward. Peak about 9.2 GiB.",
          action: {
            kind: 'experiment',
            spec: { model: MEDIUM, batch: 4, precision: 'bf16', weights: 'fp32', optimizer: 'adam', device: H100, history: true },
            label: 'fp32 weights + bf16 autocast',
          },
        },
        {
          text: "The same with the weights stored in bf16: parameters 677 MiB, gradients in bf16, and Adam's state follows the parameter dtype (1.3 GiB, 4 bytes per parameter). Peak about 6.5 GiB. The catch: updates smaller than bf16's resolution (about 3 significant digits) are lost, which is why mixed precision keeps fp32 master weights.",
          action: {
            kind: 'experiment',
            spec: { model: MEDIUM, batch: 4, precision: 'bf16', weights: 'bf16', optimizer: 'adam', device: H100, history: true },
            label: 'bf16 weights',
          },
        },
        {
          text: 'Where bf16 weights are safe is a frozen base: LoRA on a bf16 GPT-2 medium keeps the adapters in fp32 and the base in bf16. Peak about 4.3 GiB, against about 5.6 GiB for LoRA on the fp32 base.',
          action: {
            kind: 'experiment',
            spec: {
              model: MEDIUM,
              batch: 4,
              precision: 'bf16',
              weights: 'bf16',
              optimizer: 'adam',
              finetune: { method: 'lora', rank: 8, targets: ['attn'] },
              device: H100,
              history: true,
            },
            label: 'LoRA on a bf16 base',
          },
        },
      ],
      look: ["`params` in the readings: the model's storage.", 'The optimizer-state band after the first step.'],
      check: {
        question: 'Training with bf16 weights and Adam, how many bytes per parameter do the weights, gradients and Adam state take?',
        options: ['16', '12', '8', '4'],
        answer: 2,
        explanation:
          "2 (bf16 weights) + 2 (bf16 gradients) + 4 (two bf16 moment buffers) = 8 bytes, half of fp32's 16. Mixed precision with fp32 master weights keeps the 16 and adds autocast's bf16 weight copies during forward.",
      },
    },
    {
      id: 'kv-cache',
      title: 'The KV cache: static vs dynamic, and why reserved grows during generation',
      goal: 'Watch a KV cache fill during generation, and see why a growing cache makes reserved memory climb above allocated.',
      steps: [
        {
          text: "GPT-2 small generates 512 tokens after a 512-token prompt, batch 16, bf16, with a dynamic cache (Hugging Face's default): every step `torch.cat`s one more token onto each layer's k and v. Allocated climbs through the decode band (peak about 1.3 GiB over the baseline), and the run's `reserved_peak` reaches about 1.8 GiB.",
          action: {
            kind: 'experiment',
            spec: {
              model: GPT2,
              batch: 16,
              precision: 'bf16',
              mode: 'generate',
              prompt: 512,
              new_tokens: 512,
              cache: 'dynamic',
              device: H100,
              history: true,
            },
            label: 'Generate with a dynamic cache',
          },
        },
        {
          text: "A static cache is allocated once at the prefill for prompt + new tokens (576 MiB: 12 layers x k and v x 16 x 12 heads x 1024 tokens x 64 x 2 bytes) and written in place. Memory after the prefill is higher than the dynamic cache's, the decode band is flat, and `reserved_peak` is about 1.4 GiB, some 370 MiB lower.",
          action: {
            kind: 'experiment',
            spec: {
              model: GPT2,
              batch: 16,
              precision: 'bf16',
              mode: 'generate',
              prompt: 512,
              new_tokens: 512,
              cache: 'static',
              device: H100,
              history: true,
            },
            label: 'Generate with a static cache',
          },
        },
        {
          text: 'Why reserved grows with the dynamic cache: each `torch.cat` needs a block one token longer than the one it frees, so the freed blocks never quite fit the next request; the allocator carves new space and keeps the old blocks cached. `expandable_segments:True` lets it grow segments in place instead: `reserved_peak` drops to about 1.4 GiB with the same dynamic cache.',
          action: {
            kind: 'experiment',
            spec: {
              model: GPT2,
              batch: 16,
              precision: 'bf16',
              mode: 'generate',
              prompt: 512,
              new_tokens: 512,
              cache: 'dynamic',
              alloc_conf: 'expandable_segments:True',
              device: H100,
              history: true,
            },
            label: 'Dynamic cache with expandable segments',
          },
        },
      ],
      look: [
        'The prefill and decode bands, and the KV cache band in the stacked view.',
        'Reserved vs allocated during decode, and `reserved_peak` in the readings.',
      ],
      check: {
        question: 'During generation with a dynamic KV cache, reserved memory keeps rising while allocated rises slowly. Why?',
        options: [
          'The model leaks memory',
          'Each step frees cache blocks slightly too small for the next, longer request, so the cache keeps them and reserves new space',
          'The logits are kept for every step',
          'PyTorch preallocates the whole cache',
        ],
        answer: 1,
        explanation:
          'Growing tensors by concatenation asks for ever-larger blocks; the freed ones stay cached but cannot serve the next request. A static (preallocated) cache or expandable segments avoid the creep.',
      },
    },
  ];
}

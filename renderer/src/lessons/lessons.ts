// The guided experiments: questions PyTorch users ask about GPU memory, each answered by
// running something real (an experiment or playground commands) and reading the charts.
// Text uses `backticks` for code; the view renders them without HTML.
import type { DeviceInfo } from '$contract';
import { formatBytes } from '$contract/units';
import { backOfEnvelope } from './formula';
import { transformerLessons } from './transformer_lessons';
import { finetuneLessons } from './finetune_lessons';
import type { Lesson } from './lesson';

export type { Lesson, LessonAction, LessonStep, QuickCheck } from './lesson';

const SEED_MLP = { kind: 'mlp', in: 1024, hidden: 2048, depth: 2, out: 10 } as const;
const SEED_RES = { kind: 'residual', dim: 512, depth: 20 } as const;
const MiB = 2 ** 20;

export function lessons(device?: DeviceInfo): Lesson[] {
  const dev = device ?? null;
  const gib = (b: number) => (b / 2 ** 30).toFixed(1);
  const formula = backOfEnvelope(SEED_MLP, 256);
  return [
    {
      id: 'allocated-vs-reserved',
      title: 'Allocated vs reserved, and empty_cache()',
      goal: 'See why `nvidia-smi` shows more memory than `torch.cuda.memory_allocated()`, and what `empty_cache()` gives back.',
      steps: [
        {
          text: 'Create a 1000 x 1000 fp32 tensor (4,000,000 bytes). The allocator rounds it to a multiple of 512 bytes (4,000,256) and, because it is over 1 MiB and under 10 MiB, reserves a whole 20 MiB segment for it.',
          action: { kind: 'playground', commands: ['x = randn(1000, 1000)'], label: 'Run in the playground' },
        },
        {
          text: "Delete it. Allocated drops to 0; reserved stays at 20 MiB: the block goes back to PyTorch's cache, not to the GPU.",
          action: { kind: 'playground', commands: ['x = randn(1000, 1000)', 'del x'], label: 'Create, then delete' },
        },
        {
          text: 'Call `empty_cache()`: now the unused segment is returned to the device and reserved drops to 0.',
          action: {
            kind: 'playground',
            commands: ['x = randn(1000, 1000)', 'del x', 'empty_cache()', 'memory_summary()'],
            label: 'Create, delete, empty_cache',
          },
        },
      ],
      look: [
        'The allocated and reserved figures after each command.',
        'The segment map: one 20 MiB large-pool segment, then a cached-free one, then none.',
      ],
      check: {
        question: 'After `del x` (before `empty_cache()`), how much does the GPU see this process using for that tensor?',
        options: [
          '0 bytes: the tensor is gone',
          '4,000,256 bytes: the rounded block',
          '20 MiB: the whole cached segment',
          '4,000,000 bytes',
        ],
        answer: 2,
        explanation:
          'The caching allocator keeps the 20 MiB segment reserved so the next allocation of a similar size costs no cudaMalloc. Only empty_cache() (or an OOM retry) returns cached segments to the device.',
      },
    },
    {
      id: 'cache-reuse',
      title: 'How the cache reuses blocks',
      goal: 'Watch the cache serve same-size, larger and repeated requests, and when it has to reserve more.',
      steps: [
        {
          text: 'Same size: allocate, free, allocate again. The second tensor gets the cached block: reserved does not move.',
          action: { kind: 'playground', commands: ['a = randn(1000, 1000)', 'del a', 'b = randn(1000, 1000)'], label: 'Same size twice' },
        },
        {
          text: 'A larger request (`randn(1500, 1500)`, about 8.6 MiB) fits in the free remainder of the same 20 MiB segment: the allocator splits that free block. Then `randn(2000, 2000)` (about 15.3 MiB, over 10 MiB) no longer fits and gets its own segment, rounded up to a multiple of 2 MiB.',
          action: {
            kind: 'playground',
            commands: ['b = randn(1000, 1000)', 'c = randn(1500, 1500)', 'd = randn(2000, 2000)'],
            label: 'Grow the requests',
          },
        },
        {
          text: 'A loop: rebinding `t` allocates the new tensor before the old one is released, so two blocks are alive at once (both fit in the same 20 MiB segment); from the third round on, each new tensor reuses the block freed a round earlier, and reserved never moves.',
          action: {
            kind: 'playground',
            commands: ['t = randn(1000, 1000)', 't = randn(1000, 1000)', 't = randn(1000, 1000)', 't = randn(1000, 1000)'],
            label: 'Loop four times',
          },
        },
      ],
      look: [
        'Reserved after each command: it only grows when no cached free block is large enough.',
        'In the segment map, a split segment shows allocated blocks next to free ones.',
      ],
      check: {
        question: 'In a training loop, reserved memory stops growing after the first iteration or two. Why?',
        options: [
          'PyTorch frees memory with empty_cache() every step',
          'Later iterations ask for the same sizes, which the cache already holds',
          'The GPU compresses tensors',
          'Gradients are not stored after the first step',
        ],
        answer: 1,
        explanation:
          'Each iteration requests the same set of sizes. Once the cache holds blocks that fit them, every request is served from the cache and no new segment is needed.',
      },
    },
    {
      id: 'views-vs-clones',
      title: 'Views vs clones',
      goal: 'Know which tensor operations allocate memory and which only share it.',
      steps: [
        {
          text: '`y = x.view(-1)` makes a new tensor object over the same storage: allocated does not change.',
          action: { kind: 'playground', commands: ['x = randn(1000, 1000)', 'y = x.view(-1)'], label: 'Make a view' },
        },
        {
          text: '`z = x.clone()` copies the data: allocated grows by another 4,000,256 bytes.',
          action: { kind: 'playground', commands: ['x = randn(1000, 1000)', 'y = x.view(-1)', 'z = x.clone()'], label: 'Make a clone' },
        },
        {
          text: 'Now `del x`: the storage is still held by the view `y`, so allocated does not drop.',
          action: {
            kind: 'playground',
            commands: ['x = randn(1000, 1000)', 'y = x.view(-1)', 'z = x.clone()', 'del x'],
            label: 'Delete the original',
          },
        },
      ],
      look: ['The tensors table: the view shares its storage.', 'Allocated after `del x`.'],
      check: {
        question: 'You keep `y = x[0]` (a view of one row) and delete `x`. How much memory stays allocated?',
        options: ['One row', 'All of x: a view keeps its whole storage alive', 'Nothing', 'Two copies of x'],
        answer: 1,
        explanation:
          'A view holds a reference to the whole storage. Keep a small slice alive with .clone() if you want the big storage to be freed.',
      },
    },
    {
      id: 'no-grad',
      title: 'Inference under no_grad',
      goal: 'See what autograd keeps during a forward pass, and what no_grad saves.',
      steps: [
        {
          text: 'Train the seed MLP (1024-2048-2048-10) at batch 1024 and note the memory after the forward pass.',
          action: {
            kind: 'experiment',
            spec: { model: SEED_MLP, batch: 1024, optimizer: 'sgd', mode: 'train', history: true },
            label: 'Run training',
          },
        },
        {
          text: 'Run the same model in inference mode (under `torch.no_grad()`): no graph, so nothing is saved for backward.',
          action: {
            kind: 'experiment',
            spec: { model: SEED_MLP, batch: 1024, optimizer: 'none', mode: 'inference', history: true },
            label: 'Run inference',
          },
        },
      ],
      look: [
        'The activations band in the stacked view: present in training, almost absent in inference.',
        'Peak allocated in the two summaries.',
      ],
      check: {
        question: 'Under no_grad, which activations are alive at the same time?',
        options: ["All layers' outputs", "Only a layer's input and output while it runs", 'None', 'Only the gradients'],
        answer: 1,
        explanation:
          'Without autograd nothing is saved for backward, so each intermediate is freed as soon as the next layer has consumed it.',
      },
    },
    {
      id: 'training-memory',
      title: 'Where training memory goes',
      goal: "Split a training step's memory into parameters, gradients, optimizer state and activations.",
      steps: [
        {
          text: 'Train the seed MLP with Adam at batch 256. It has 6,316,042 parameters, 24.1 MiB of fp32 weights.',
          action: { kind: 'experiment', spec: { model: SEED_MLP, batch: 256, optimizer: 'adam', history: true }, label: 'Run with Adam' },
        },
        {
          text: 'Switch the chart to "by category". Gradients are as big as the weights (4 bytes per parameter); Adam adds `exp_avg` and `exp_avg_sq`, 8 bytes per parameter, created at the first step and kept.',
        },
        {
          text: 'Now batch 2048: parameters, gradients and Adam state do not change; activations grow linearly with the batch.',
          action: {
            kind: 'experiment',
            spec: { model: SEED_MLP, batch: 2048, optimizer: 'adam', history: true },
            label: 'Run at batch 2048',
          },
        },
      ],
      look: [
        'Stacked view: the optimizer-state band appears at the first optimizer step.',
        'The phase bands: forward (blue), backward (orange), optimizer step (green).',
      ],
      check: {
        question: "How many bytes per parameter do fp32 weights, gradients and Adam's state take together?",
        options: ['4', '8', '12', '16'],
        answer: 3,
        explanation:
          "4 (weights) + 4 (gradients) + 8 (Adam's two moment buffers) = 16 bytes per parameter, before activations. The foreach step briefly needs one more parameter-sized temporary.",
      },
    },
    {
      id: 'checkpointing',
      title: 'Gradient checkpointing and the sqrt(n) rule',
      goal: 'Learn when checkpointing lowers the peak, and why it saves nothing in the seed example.',
      steps: [
        {
          text: 'Residual model, width 512, 20 blocks, batch 128, no checkpointing. Each block saves 3 tensors of 128 x 512 x 4 = 256 KiB (its input, which is the previous sum, and both ReLU outputs, which are the Linear inputs): 15 MiB after forward.',
          action: {
            kind: 'experiment',
            spec: { model: SEED_RES, batch: 128, optimizer: 'sgd', checkpoint: 'none', history: true },
            label: 'Run without checkpointing',
          },
        },
        {
          text: 'Checkpoint every block: each block keeps only its input, 256 KiB x 20 = 5 MiB after forward. But compare the peaks.',
          action: {
            kind: 'experiment',
            spec: { model: SEED_RES, batch: 128, optimizer: 'sgd', checkpoint: 'block', history: true },
            label: 'Run with per-block checkpointing',
          },
        },
        {
          text: "The peak is at the end of backward, when the gradients (40.1 MiB, as big as the weights) exist and the activations are already gone. PyTorch measured 80.7 MiB without and 81.7 MiB with checkpointing: recomputation adds a block's activations and a workspace. Now batch 4096: activations (480 MiB) dwarf the gradients and checkpointing pays.",
          action: {
            kind: 'experiment',
            spec: { model: SEED_RES, batch: 4096, optimizer: 'sgd', checkpoint: 'sqrt', history: true },
            label: 'Run batch 4096 with sqrt(n) checkpointing',
          },
        },
      ],
      look: [
        'Memory at the end of the forward band vs the peak inside the backward band.',
        'With sqrt(n): 20 blocks in round(sqrt(20)) = 4 segments of 5 blocks; backward rebuilds one segment at a time.',
      ],
      check: {
        question: 'Per-block checkpointing cut memory after forward from 15 MiB to 5 MiB, yet the peak did not drop. Why?',
        options: [
          'Checkpointing is broken for residual blocks',
          'The peak is in backward, set by weights + gradients, which checkpointing does not touch',
          'The activations were stored in fp16',
          'The optimizer state dominates',
        ],
        answer: 1,
        explanation:
          'Checkpointing only shrinks saved activations. Here they are small next to the 40 MiB of gradients that all exist at the end of backward, so the peak (weights + gradients + a little) is unchanged, and recomputation even adds about 1 MiB. It pays when activations dominate: large batch, long sequences, wide layers.',
      },
    },
    {
      id: 'mixed-precision',
      title: 'Mixed precision: what it halves and what it does not',
      goal: 'See which memory autocast (fp16/bf16) shrinks.',
      steps: [
        {
          text: 'Residual 1024 x 16, batch 512, fp32, Adam.',
          action: {
            kind: 'experiment',
            spec: { model: { kind: 'residual', dim: 1024, depth: 16 }, batch: 512, optimizer: 'adam', precision: 'fp32', history: true },
            label: 'Run fp32',
          },
        },
        {
          text: "The same under bf16 autocast. Activations are half the size, but autocast also keeps a bf16 copy of every weight while forward runs (2 bytes per parameter, 64 MiB for these 16.8 M parameters): here that cache outweighs the 48 MiB saved, and the peak, set by Adam's step on the fp32 weights, does not move at all.",
          action: {
            kind: 'experiment',
            spec: { model: { kind: 'residual', dim: 1024, depth: 16 }, batch: 512, optimizer: 'adam', precision: 'bf16', history: true },
            label: 'Run bf16',
          },
        },
        {
          text: 'At batch 4096 the activations (768 MiB in fp32) dominate, and bf16 saves about 300 MiB at the peak.',
          action: {
            kind: 'experiment',
            spec: { model: { kind: 'residual', dim: 1024, depth: 16 }, batch: 4096, optimizer: 'adam', precision: 'bf16', history: true },
            label: 'Run bf16 at batch 4096',
          },
        },
        {
          text: 'And fp32 at batch 4096, to compare.',
          action: {
            kind: 'experiment',
            spec: { model: { kind: 'residual', dim: 1024, depth: 16 }, batch: 4096, optimizer: 'adam', precision: 'fp32', history: true },
            label: 'Run fp32 at batch 4096',
          },
        },
      ],
      look: [
        'Stacked view: activations halve; parameters, gradients and Adam state do not.',
        "Memory after forward: autocast's weight copies appear there and are dropped when autocast exits.",
      ],
      check: {
        question: 'With torch.autocast(bfloat16), which memory is halved?',
        options: ['Weights', 'Gradients', 'Adam state', 'Activations saved for backward'],
        answer: 3,
        explanation:
          "Autocast runs matmuls in bf16, so their outputs (most saved activations) are 2 bytes per value. The model's parameters stay fp32, so gradients and Adam's state stay fp32 too, and autocast adds bf16 copies of the weights while it runs.",
      },
    },
    {
      id: 'fragmentation',
      title: 'A fragmentation OOM, max_split_size_mb and expandable_segments',
      goal: 'Reproduce PyTorch\'s fragmentation scenario: an OOM with plenty of memory "reserved but unallocated".',
      steps: [
        {
          text: 'Cap the device at 1100 MiB. Allocate 1000 MiB and free it; allocate five 200 MiB tensors (they are carved out of the cached 1000 MiB block); free parts 0, 2 and 4; ask for 400 MiB. 600 MiB are free but in three 200 MiB holes.',
          action: {
            kind: 'playground',
            capacity: '1100MiB',
            allocConf: '',
            label: 'Run with default settings',
            commands: [
              'big = randn(262144000)',
              'del big',
              'p0 = randn(52428800)',
              'p1 = randn(52428800)',
              'p2 = randn(52428800)',
              'p3 = randn(52428800)',
              'p4 = randn(52428800)',
              'del p0',
              'del p2',
              'del p4',
              'x = randn(104857600)',
            ],
          },
        },
        {
          text: 'With `max_split_size_mb:128` blocks over 128 MiB are never split: each 200 MiB part gets its own segment, the freed parts are whole segments, and the allocator can release them and map 400 MiB.',
          action: {
            kind: 'playground',
            capacity: '1100MiB',
            allocConf: 'max_split_size_mb:128',
            label: 'Run with max_split_size_mb:128',
            commands: [
              'big = randn(262144000)',
              'del big',
              'p0 = randn(52428800)',
              'p1 = randn(52428800)',
              'p2 = randn(52428800)',
              'p3 = randn(52428800)',
              'p4 = randn(52428800)',
              'del p0',
              'del p2',
              'del p4',
              'x = randn(104857600)',
            ],
          },
        },
        {
          text: 'With `expandable_segments:True` a segment is a range of mapped pages that can grow and shrink, so free pages can be unmapped and remapped where they are needed.',
          action: {
            kind: 'playground',
            capacity: '1100MiB',
            allocConf: 'expandable_segments:True',
            label: 'Run with expandable_segments',
            commands: [
              'big = randn(262144000)',
              'del big',
              'p0 = randn(52428800)',
              'p1 = randn(52428800)',
              'p2 = randn(52428800)',
              'p3 = randn(52428800)',
              'p4 = randn(52428800)',
              'del p0',
              'del p2',
              'del p4',
              'x = randn(104857600)',
            ],
          },
        },
      ],
      look: [
        'The OOM message: "600.00 MiB is reserved by PyTorch but unallocated".',
        'The segment map before the 400 MiB request: hatched holes between allocated blocks.',
      ],
      check: {
        question: 'An OOM says a lot of memory is "reserved by PyTorch but unallocated". What is the first thing to try?',
        options: [
          'Buy a bigger GPU',
          'PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (or a max_split_size_mb)',
          'Call empty_cache() in the loop',
          'Use fp64',
        ],
        answer: 1,
        explanation:
          'That memory is cached but fragmented: free blocks exist, none big enough. Expandable segments let the allocator remap free pages; max_split_size_mb keeps large blocks whole so they can be released. empty_cache() in a loop only slows things down.',
      },
    },
    {
      id: 'loss-leak',
      title: 'The `total_loss += loss` leak',
      goal: "See a training loop keep every iteration's graph alive, and the fix.",
      steps: [
        {
          text: 'Ten forward passes accumulating `total = total + loss` (a tensor): each loss keeps its whole graph (all saved activations) alive.',
          action: {
            kind: 'experiment',
            spec: {
              model: SEED_MLP,
              batch: 1024,
              iterations: 10,
              mode: 'loss_accumulation',
              keep_loss_graph: true,
              optimizer: 'none',
              history: true,
            },
            label: 'Run the leaky loop',
          },
        },
        {
          text: 'Now accumulate `total += loss.item()` (a Python float): each graph is freed when `loss` is rebound.',
          action: {
            kind: 'experiment',
            spec: {
              model: SEED_MLP,
              batch: 1024,
              iterations: 10,
              mode: 'loss_accumulation',
              keep_loss_graph: false,
              optimizer: 'none',
              history: true,
            },
            label: 'Run with .item()',
          },
        },
      ],
      look: ['Allocated climbs step by step in the leaky run and stays flat with .item().'],
      check: {
        question: 'Why does `total_loss += loss` grow memory every iteration?',
        options: [
          'The loss tensor is large',
          "total_loss becomes part of the graph and keeps every iteration's saved activations alive",
          'PyTorch caches losses',
          'The optimizer stores losses',
        ],
        answer: 1,
        explanation:
          'Adding a tensor that requires grad builds a graph node that references the previous graphs. Use loss.item() (or loss.detach()) for logging.',
      },
    },
    {
      id: 'grad-accumulation',
      title: 'Gradient accumulation',
      goal: 'Train with an effective batch of 2048 without the memory of batch 2048.',
      steps: [
        {
          text: 'Batch 2048 in one go.',
          action: {
            kind: 'experiment',
            spec: { model: SEED_MLP, batch: 2048, accum: 1, optimizer: 'adam', history: true },
            label: 'Run batch 2048',
          },
        },
        {
          text: 'Micro-batches of 512, four accumulation steps: the same effective batch. Activations are those of 512 samples; the gradients stay allocated between micro-batches.',
          action: {
            kind: 'experiment',
            spec: { model: SEED_MLP, batch: 512, accum: 4, optimizer: 'adam', history: true },
            label: 'Run 4 x 512',
          },
        },
      ],
      look: ['The forward/backward bands repeat four times per optimizer step.', 'Peak: activations shrink by 4x, gradients do not.'],
      check: {
        question: 'What does gradient accumulation not reduce?',
        options: ['Activation memory', 'Gradient and optimizer-state memory', 'The micro-batch input', 'Nothing: it reduces everything'],
        answer: 1,
        explanation:
          'Gradients are summed in place across micro-batches, so they are always allocated; optimizer state depends only on the parameters.',
      },
    },
    {
      id: 'oom-diagnosis',
      title: 'A systematic OOM diagnosis',
      goal: 'Read an OOM the way you would in a real job: what was asked, what is allocated, what is cached, and which category dominates.',
      steps: [
        {
          text: 'Run the seed MLP at batch 8192 on a device capped at 256 MiB (the cuBLAS workspaces alone take about 65 MiB of it).',
          action: {
            kind: 'experiment',
            spec: { model: SEED_MLP, batch: 8192, optimizer: 'adam', capacity: '256MiB', history: true },
            label: 'Run into an OOM',
          },
        },
        {
          text: 'Read the message top to bottom: "Tried to allocate" (this request), "allocated by PyTorch" (live tensors), "reserved but unallocated" (cache; large = fragmentation). The diagnosis names the phase, the module and the biggest category.',
        },
        {
          text: 'Fix by the dominant category: activations → smaller batch, checkpointing, autocast; optimizer state → SGD, 8-bit or sharded optimizers; fragmentation → expandable_segments. Try batch 2048.',
          action: {
            kind: 'experiment',
            spec: { model: SEED_MLP, batch: 2048, optimizer: 'adam', capacity: '256MiB', history: true },
            label: 'Run at batch 2048',
          },
        },
      ],
      look: ['The OOM marker on the chart and the capacity line.', 'The dominant category in the diagnosis.'],
      check: {
        question: 'An OOM shows a small "reserved but unallocated" and activations as 70% of allocated memory. Which fix targets it?',
        options: [
          'expandable_segments:True',
          'A smaller batch or gradient checkpointing',
          'empty_cache() before the step',
          'A different optimizer',
        ],
        answer: 1,
        explanation:
          'Little cached memory means fragmentation is not the problem; activations dominate, and they scale with the batch and are what checkpointing trades for compute.',
      },
    },
    {
      id: 'estimate-vs-measure',
      title: 'Estimating peak memory by formula vs measuring it',
      goal: 'Use parameters x (4 + 4 + 8) + batch x activations, and see where it is off.',
      steps: [
        {
          text: `The formula for the seed MLP with Adam at batch 256: ${formula.parameters.toLocaleString('en-US')} parameters x 16 bytes = ${formatBytes(formula.states)}, plus 256 x (2 x 2048 + 10) x 4 bytes of saved activations = ${formatBytes(formula.activations)}: ${formatBytes(formula.bytes)} in all.`,
        },
        {
          text: "Load the spec into the experiment form: its prediction is not a formula but the run itself, simulated on the card, and says 121.47 MiB over the baseline. Run it and compare the summary's measured peak.",
          action: { kind: 'experiment', spec: { model: SEED_MLP, batch: 256, optimizer: 'adam', history: true }, label: 'Run and compare' },
        },
        {
          text: "Find the peak on the chart: it is in the optimizer step. The activations the formula adds are already freed there; alive are the weights, gradients and both moment buffers (96.4 MiB), the 1 MiB input batch, and the foreach Adam step's temporaries, about one more parameter-sized buffer (24.1 MiB). That buffer is the 21 MiB the formula misses.",
        },
      ],
      look: [
        "The peak over the baseline in the run summary, next to the formula's figure above.",
        'Peak in the optimizer step vs in backward (the phase peaks table).',
      ],
      check: {
        question: 'Which is usually missing from the simple formula?',
        options: [
          'Parameters',
          'Gradients',
          'Temporaries and workspaces (e.g. foreach Adam intermediates, cuBLAS workspace)',
          'Adam state',
        ],
        answer: 2,
        explanation:
          'The formula counts what lives across a step. Transients (step temporaries, matmul workspaces, rounding to 512 bytes and segment sizes) come on top; measuring catches them.',
      },
    },
    {
      id: 'memory-hierarchy',
      title: "The GPU memory hierarchy, with this device's figures",
      goal: 'Put capacity and bandwidth in proportion: how long does it take just to read memory?',
      steps: [
        {
          text: dev
            ? `${dev.name}: ${gib(dev.total)} GiB of device memory (HBM) at about ${dev.memBandwidthGBs.toLocaleString('en-US')} GB/s, ${dev.fp32Tflops} TFLOP/s fp32 and ${dev.bf16Tflops} TFLOP/s bf16. Reading all of it once takes about ${((dev.total / (dev.memBandwidthGBs * 1e9)) * 1000).toFixed(1)} ms.`
            : 'Pick a device in the Devices tab: its capacity, bandwidth and throughput fill in here.',
        },
        {
          text: dev
            ? `To keep the fp32 units busy a kernel needs about ${((dev.fp32Tflops * 1e12) / (dev.memBandwidthGBs * 1e9)).toFixed(0)} floating-point operations per byte it reads (${((dev.bf16Tflops * 1e12) / (dev.memBandwidthGBs * 1e9)).toFixed(0)} for bf16). Elementwise ops do well under 1, so they are bandwidth-bound; large matmuls are compute-bound.`
            : 'Arithmetic intensity (FLOPs per byte) decides whether a kernel is limited by memory bandwidth or compute.',
        },
        {
          text: 'Closer to the cores sit the L2 cache, per-SM shared memory/L1 and registers: far smaller, far faster. The caching allocator only manages device memory; nothing here is about the caches.',
        },
      ],
      look: ['The Devices tab for total and free memory.'],
      check: {
        question: 'An fp32 elementwise add reads 8 bytes and writes 4 per FLOP. On a modern GPU it is limited by…',
        options: ['compute throughput', 'memory bandwidth', 'PCIe', 'the caching allocator'],
        answer: 1,
        explanation:
          "At 1 FLOP per 12 bytes it is far below the device's FLOPs-per-byte ridge point, so it runs at memory speed. Fusing elementwise ops saves memory traffic and memory.",
      },
    },
    ...transformerLessons(),
    ...finetuneLessons(),
  ];
}

export const LESSON_COUNT = lessons().length;
export { MiB };

// The playground's `help`: what it reads, in the words people type. Kept under 72 columns
// so it fits the console without scrolling sideways.
export const HELP_TEXT = `A small piece of Python over vramlab's engine and PyTorch's caching
allocator. Tensors live on the session's device, as after
torch.set_default_device('cuda'); torch. and torch.cuda. are optional.

Create   x = randn(1000, 1000)   zeros(...)  ones(...)  empty(...)
         dtype=float16 | bfloat16 | float32 | float64
Views    y = x.view(-1)  x.view(10, 100)  x.reshape(...)  x.t()  x.T
Copies   z = x.clone()  x.contiguous()  x.to(bfloat16)  x.half()
         x.float()  x.bfloat16()
Matmul   w = x @ y   matmul(x, y)   x.matmul(y)   mm(x, y)
Free     del x       frees the storage once no other view holds it
         x = None    rebinding drops the old tensor too
Memory   empty_cache()  memory_allocated()  memory_reserved()
         max_memory_allocated()  max_memory_reserved()
         reset_peak_memory_stats()  memory_summary()
Inspect  x  (shape, dtype, bytes, block, view)  x.shape  x.dtype
         x.numel()  x.nbytes  print(...)
Also     int arithmetic (randn(2**20)), several statements with ';'

A result you do not assign is freed at once, as in a script (the
Python REPL would keep it alive in _).`;

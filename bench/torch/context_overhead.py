"""What nvidia-smi sees beyond memory_reserved(): the CUDA context, library handles and
loaded kernels, measured step by step on the GPU machine (one fresh process).
  python3 context_overhead.py > overhead.json
Device-wide used memory is read with nvidia-smi (the machine runs nothing else)."""
import json, subprocess, sys
import torch, torch.nn.functional as F

def smi_used():
    out = subprocess.run(["nvidia-smi", "--query-gpu=memory.used,memory.total", "--format=csv,noheader,nounits"],
                         capture_output=True, text=True).stdout.strip().splitlines()[0]
    used, total = (int(v) for v in out.split(","))
    return used * 2**20, total * 2**20

rows = []
def mark(label):
    torch.cuda.synchronize() if torch.cuda.is_initialized() else None
    used, total = smi_used()
    res = torch.cuda.memory_reserved() if torch.cuda.is_initialized() else 0
    rows.append({"step": label, "smi_used": used, "reserved": res, "outside_pytorch": used - res})

mark("before CUDA init")
torch.cuda.init(); x = torch.zeros(1, device="cuda"); mark("context (first tensor)")
a = torch.randn(64, 64, device="cuda"); (a @ a); mark("cuBLAS handle (first matmul)")
lin = torch.nn.Linear(64, 64).cuda(); lin(a).sum().backward(); mark("cuBLASLt + autograd thread")
q = torch.randn(2, 4, 128, 64, device="cuda", dtype=torch.bfloat16, requires_grad=True)
F.scaled_dot_product_attention(q, q, q, is_causal=True).sum().backward(); mark("flash attention fwd+bwd")
q32 = q.float().detach().requires_grad_()
F.scaled_dot_product_attention(q32, q32, q32, is_causal=True).sum().backward(); mark("efficient attention fwd+bwd")
lg = torch.randn(256, 8192, device="cuda", requires_grad=True)
F.cross_entropy(lg, torch.randint(0, 8192, (256,), device="cuda")).backward(); mark("cross_entropy fwd+bwd")
ln = torch.nn.LayerNorm(64).cuda(); ln(a).sum().backward(); mark("layer_norm fwd+bwd")
e = torch.nn.Embedding(1000, 64).cuda(); e(torch.randint(0, 1000, (8, 16), device="cuda")).sum().backward(); mark("embedding fwd+bwd")
with torch.autocast("cuda", dtype=torch.bfloat16):
    y = lin(a)
y.float().sum().backward(); mark("autocast bf16 linear")
opt = torch.optim.AdamW(lin.parameters()); opt.step(); mark("AdamW foreach step")
print(json.dumps({"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                  "total": torch.cuda.get_device_properties(0).total_memory, "rows": rows}, indent=1))

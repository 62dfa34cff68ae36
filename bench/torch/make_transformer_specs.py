"""Writes transformer_specs.json: the transformer configurations we measure with PyTorch
(../shared/refs/torch_protocol.py for training/inference/loss-accumulation, and
torch_protocol_finetune.py for weights/finetune/generate/shapes) on the GPU machine.
Chosen to cover what decides memory: odd shapes (head_dim not a power of two, vocab not a
multiple of 8), small and large vocabularies, long sequences, every precision (both SDPA
backends), every checkpoint mode, optimizer options, accumulation and the other modes."""
import json

G = lambda **k: {"kind": "gpt", **k}
L = lambda **k: {"kind": "llama", **k}
gpt_s = G(vocab=8192, seq=256, dim=512, depth=6, heads=8)
gpt_odd = G(vocab=1003, seq=100, dim=192, depth=3, heads=3)
gpt_odd2 = G(vocab=777, seq=77, dim=96, depth=2, heads=4)
gpt_long = G(vocab=4096, seq=2048, dim=256, depth=2, heads=4)
gpt2 = G(vocab=50257, seq=128, dim=384, depth=2, heads=6)
ll_s = L(vocab=32000, seq=512, dim=512, depth=4, heads=8, kv_heads=2, ffn=1408)
ll_odd = L(vocab=5001, seq=200, dim=320, depth=3, heads=5, kv_heads=1, ffn=864)
ll_small = L(vocab=2048, seq=128, dim=256, depth=2, heads=8, kv_heads=4, ffn=688)
ll_long = L(vocab=8000, seq=2048, dim=256, depth=2, heads=4, kv_heads=2, ffn=704)

train = []
def t(model, **kw):
    s = {"model": model, "batch": kw.pop("batch", 4), "optimizer": kw.pop("optimizer", "adamw")}
    s.update(kw); train.append(s)

for p in ["fp32", "tf32", "fp16", "bf16"]:
    t(gpt_odd, precision=p); t(ll_odd, precision=p)
for c in ["block", "sqrt", {"every": 2}]:
    t(gpt_odd, precision="fp32", checkpoint=c); t(gpt_odd, precision="bf16", checkpoint=c)
    t(ll_odd, precision="bf16", checkpoint=c)
t(ll_odd, precision="fp32", checkpoint="block")
t(gpt_odd2, precision="fp32", batch=3); t(gpt_odd2, precision="bf16", batch=5)
t(gpt_long, precision="fp32", batch=2); t(gpt_long, precision="bf16", batch=2, checkpoint="block")
t(gpt2, precision="bf16", batch=4); t(gpt2, precision="fp32", batch=2)
t(ll_long, precision="bf16", batch=2); t(ll_long, precision="fp32", batch=1)
t(ll_small, precision="bf16", batch=8); t(ll_small, precision="fp16", batch=8, checkpoint="sqrt")
t(gpt_odd, precision="fp32", optimizer="sgd"); t(gpt_odd, precision="bf16", optimizer={"kind": "sgd", "momentum": 0.9, "weight_decay": 0.01})
t(gpt_odd, precision="fp32", optimizer={"kind": "adam", "foreach": False})
t(ll_odd, precision="bf16", optimizer={"kind": "adamw", "foreach": False})
t(ll_odd, precision="bf16", optimizer="adam")
t(gpt_odd, precision="bf16", accum=2); t(ll_odd, precision="fp32", accum=3, batch=2)
t(gpt_odd, precision="fp32", set_to_none=False)
t(gpt_s, precision="fp16", batch=8)
t(gpt_odd, precision="bf16", mode="inference"); t(ll_odd, precision="fp32", mode="inference")
t(gpt_odd, precision="fp32", mode="loss_accumulation", keep_loss_graph=True, iterations=3)
t(ll_odd, precision="bf16", mode="loss_accumulation", keep_loss_graph=False, iterations=3)

ft = []
def f(model, **kw):
    s = {"model": model, "batch": kw.pop("batch", 4), "optimizer": kw.pop("optimizer", "adamw")}
    s.update(kw); ft.append(s)
lora = lambda targets, r=8, a=16: {"method": "lora", "rank": r, "alpha": a, "targets": targets}
f(gpt_odd, precision="bf16", finetune=lora(["attn", "proj"]))
f(gpt_odd, precision="fp32", finetune=lora(["attn", "proj", "fc", "mlp_proj"], 4, 4))
f(gpt_odd, precision="bf16", weights="bf16", finetune=lora(["fc"], 16, 32), checkpoint="block")
f(ll_odd, precision="bf16", weights="bf16", finetune=lora(["q", "k", "v", "o", "gate", "up", "down"], 4, 8))
f(ll_odd, precision="fp32", finetune=lora(["q", "v"]))
f(ll_odd, precision="bf16", weights="bf16", finetune=lora(["q", "v"]), checkpoint="block")
f(gpt_odd, precision="fp32", finetune={"method": "freeze", "blocks": 2})
f(ll_odd, precision="bf16", weights="bf16", finetune={"method": "freeze", "blocks": 1})
f(gpt_odd, precision="fp16", weights="fp16", optimizer="sgd")
f(ll_odd, precision="bf16", weights="bf16", optimizer={"kind": "sgd", "momentum": 0.9})
f(gpt_odd, precision="fp32", weights="bf16", optimizer="adam")
f(ll_odd, precision="fp32")
f(gpt_odd, precision="bf16")
for cache in ["dynamic", "static"]:
    f(gpt_odd, precision="bf16", mode="generate", prompt=40, new_tokens=12, cache=cache, batch=3)
    f(ll_odd, precision="fp32", mode="generate", prompt=64, new_tokens=9, cache=cache, batch=2)
    f(ll_odd, precision="bf16", weights="bf16", mode="generate", prompt=150, new_tokens=50, cache=cache, batch=8)
    f(gpt_s, precision="fp32", weights="fp32", mode="generate", prompt=100, new_tokens=30, cache=cache, batch=4)
f(ll_odd, precision="bf16", shapes=[{"batch": 3, "seq": 50}, {"batch": 5, "seq": 120}, {"batch": 2, "seq": 200}, {"batch": 6, "seq": 33}])
f(gpt_odd, precision="bf16", shapes=[{"batch": 7, "seq": 64}, {"batch": 2, "seq": 100}, {"batch": 9, "seq": 31}], alloc_conf="expandable_segments:True")
f(gpt_odd, precision="fp32", alloc_conf="expandable_segments:True")

json.dump({"train": train, "finetune": ft}, open("transformer_specs.json", "w"), indent=0)
print(len(train), "train +", len(ft), "finetune specs")

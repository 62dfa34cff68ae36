"""PyTorch on the specs `scripts/length-fix-specs.mjs` writes (the usual fixes for varying
lengths), each in a fresh process, with torch_protocol_finetune.py's protocol. A spec's
`empty_cache_every: k` calls torch.cuda.empty_cache() after every k-th iteration's
zero_grad, as vramlab's spec key does (the protocol itself has no such cadence).
  python3 protocol_fixes.py PROTOCOL_DIR SPECS.json OUT.json [parallel]"""
import json, os, subprocess, sys


def one(proto_dir, spec):
    sys.path.insert(0, proto_dir)
    import torch
    import torch_protocol_finetune as P
    every = spec.get("empty_cache_every", 0)
    if every:
        make = P.make_opt

        def make_opt(s, params):
            opt = make(s, params)
            zero_grad, calls = opt.zero_grad, [0]

            def zero_grad_then_empty(set_to_none=True):
                zero_grad(set_to_none=set_to_none)
                calls[0] += 1
                if calls[0] % every == 0:
                    torch.cuda.empty_cache()

            opt.zero_grad = zero_grad_then_empty
            return opt

        P.make_opt = make_opt
    return P.one(spec)


if __name__ == "__main__":
    if sys.argv[1] == "--one":
        print(json.dumps(one(sys.argv[2], json.loads(sys.argv[3]))))
        sys.exit(0)
    proto_dir, specs, out = sys.argv[1], json.load(open(sys.argv[2])), sys.argv[3]
    par = int(sys.argv[4]) if len(sys.argv) > 4 else 4
    from concurrent.futures import ThreadPoolExecutor

    def go(s):
        env = dict(os.environ, PYTORCH_CUDA_ALLOC_CONF=s.get("alloc_conf", ""))
        p = subprocess.run([sys.executable, __file__, "--one", proto_dir, json.dumps(s)], capture_output=True, text=True, timeout=400, env=env)
        if p.returncode != 0:
            return {"spec": s, "error": p.stderr[-1500:]}
        return json.loads(p.stdout.strip().splitlines()[-1])

    with ThreadPoolExecutor(par) as ex:
        runs = list(ex.map(go, specs))
    import torch
    json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__, "runs": runs}, open(out, "w"), indent=1)
    print(out, len(runs), "runs,", sum(1 for r in runs if "error" in r), "errors,", sum(1 for r in runs if r.get("oom")), "ooms")
    for r in runs:
        if "error" in r:
            print("ERR", json.dumps(r["spec"])[:200], r["error"][-400:])

#!/usr/bin/env python3
"""Convert a torch.cuda.memory._dump_snapshot() pickle into vramlab's replay text.

One op per line:  a <id> <size> <stream>  |  f <id>  |  e
plus  s <address> <size>  where the recorded run's cudaMalloc returned a segment (not an
op: a sim device hands those addresses out again so best-fit ties break the same way).
- `alloc` events become `a` (their size is the requested size: c10 records orig_size),
- `free_completed` events become `f` of the id the address was handed out under,
- each run of consecutive `segment_free` events becomes one `e` (empty_cache()).
  (Segment frees also happen inside a malloc that retries after an OOM; the fixtures
  converted here have num_alloc_retries == 0, so every run is an empty_cache call.)
Streams are renumbered 0, 1, ... in address order, keeping the default stream 0.

Usage: scripts/pickle_to_trace.py in.pickle [out.trace.txt]
"""
import pickle
import sys


def convert(path):
    with open(path, "rb") as f:
        snap = pickle.load(f)
    traces = snap["device_traces"]
    events = [e for dev in traces for e in dev]
    streams = sorted({e["stream"] for e in events} | {0})
    stream_id = {s: i for i, s in enumerate(streams)}
    live = {}
    next_id = 0
    out = [
        "# vramlab replay trace from %s" % path.split("/")[-1],
        "# allocator_settings: %s" % snap.get("allocator_settings", {}).get("PYTORCH_CUDA_ALLOC_CONF", ""),
    ]
    prev_action = None
    for e in events:
        action = e["action"]
        if action == "alloc":
            if e["addr"] in live:
                raise SystemExit("address %#x allocated twice" % e["addr"])
            live[e["addr"]] = next_id
            out.append("a %d %d %d" % (next_id, e["size"], stream_id[e["stream"]]))
            next_id += 1
        elif action == "free_completed":
            ident = live.pop(e["addr"], None)
            if ident is None:
                raise SystemExit("free of unknown address %#x" % e["addr"])
            out.append("f %d" % ident)
        elif action == "segment_alloc":
            out.append("s %d %d" % (e["addr"], e["size"]))
        elif action == "segment_free" and prev_action != "segment_free":
            out.append("e")
        prev_action = action
    return "\n".join(out) + "\n"


def main():
    if len(sys.argv) not in (2, 3):
        raise SystemExit(__doc__)
    text = convert(sys.argv[1])
    if len(sys.argv) == 3:
        with open(sys.argv[2], "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()

// Writes a long synthetic memory snapshot in PyTorch's pickle layout, for the large-file
// benchmark: `node bench/snapshot/gen_snapshot.mjs --events 5000000 --out big.pickle`.
// The trace is a training loop (parameters, per-layer activations, backward temporaries,
// optimizer steps) driven through vramlab's own caching allocator, so its addresses,
// segments and final state are self-consistent. The pickle is written as CPython writes
// PyTorch's: memoized strings and frame dicts, a new stack list per allocation that its
// free events refer back to, lists and dicts in batches of 1000, no FRAME opcodes, and
// the compile_context ('N/A', a new string each time) and user_metadata of PyTorch 2.11.
// Needs the native addon (build/Release/vramlab.node). Memory stays bounded: events are
// written as the allocator's history is drained.
import { closeSync, openSync, renameSync, writeSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

function args() {
  const a = process.argv.slice(2);
  const get = (k, d) => {
    const i = a.indexOf(k);
    return i >= 0 ? a[i + 1] : d;
  };
  const events = Number(get('--events', '1000000'));
  const out = get('--out', null);
  if (!Number.isInteger(events) || events < 1000 || !out) {
    console.error('usage: node bench/snapshot/gen_snapshot.mjs --events N (>= 1000) --out FILE.pickle [--layers 24]');
    process.exit(2);
  }
  return { events, out, layers: Number(get('--layers', '24')) };
}

// ---- a streaming pickle writer (protocol 4 opcodes, as CPython emits them) --------------

class PickleOut {
  constructor(file) {
    this.fd = openSync(file, 'w');
    this.buf = Buffer.allocUnsafe(1 << 22);
    this.n = 0;
    this.memo = 0;
    this.strings = new Map(); // memoized str -> memo index
    this.bytes = 0;
  }
  room(k) {
    if (this.n + k > this.buf.length) this.flush();
  }
  flush() {
    writeSync(this.fd, this.buf, 0, this.n);
    this.bytes += this.n;
    this.n = 0;
  }
  op(b) {
    this.room(1);
    this.buf[this.n++] = b;
  }
  memoize() {
    this.op(0x94);
    return this.memo++;
  }
  get(idx) {
    this.room(5);
    if (idx < 256) {
      this.buf[this.n++] = 0x68; // BINGET
      this.buf[this.n++] = idx;
    } else {
      this.buf[this.n++] = 0x6a; // LONG_BINGET
      this.buf.writeUInt32LE(idx, this.n);
      this.n += 4;
    }
  }
  str(s) {
    const known = this.strings.get(s);
    if (known !== undefined) return this.get(known);
    const b = Buffer.from(s, 'utf8');
    this.room(b.length + 9);
    if (b.length < 256) {
      this.buf[this.n++] = 0x8c; // SHORT_BINUNICODE
      this.buf[this.n++] = b.length;
    } else {
      this.buf[this.n++] = 0x58; // BINUNICODE
      this.buf.writeUInt32LE(b.length, this.n);
      this.n += 4;
    }
    b.copy(this.buf, this.n);
    this.n += b.length;
    this.strings.set(s, this.memoize());
  }
  /** A str written out again (not memoized by content): PyTorch makes a new one per event. */
  freshStr(s) {
    const b = Buffer.from(s, 'utf8');
    this.room(b.length + 3);
    this.buf[this.n++] = 0x8c; // SHORT_BINUNICODE
    this.buf[this.n++] = b.length;
    b.copy(this.buf, this.n);
    this.n += b.length;
    this.memoize();
  }
  int(v) {
    this.room(12);
    if (v >= 0 && v < 256) {
      this.buf[this.n++] = 0x4b;
      this.buf[this.n++] = v;
    } else if (v >= 0 && v < 65536) {
      this.buf[this.n++] = 0x4d;
      this.buf.writeUInt16LE(v, this.n);
      this.n += 2;
    } else if (v >= -(2 ** 31) && v < 2 ** 31) {
      this.buf[this.n++] = 0x4a;
      this.buf.writeInt32LE(v, this.n);
      this.n += 4;
    } else {
      // LONG1: little-endian two's complement, as few bytes as keep the sign.
      let x = BigInt(v);
      const bytes = [];
      for (;;) {
        const b = Number(x & 0xffn);
        bytes.push(b);
        x >>= 8n;
        if ((x === 0n && (b & 0x80) === 0) || (x === -1n && (b & 0x80) !== 0)) break;
      }
      this.buf[this.n++] = 0x8a;
      this.buf[this.n++] = bytes.length;
      for (const b of bytes) this.buf[this.n++] = b;
    }
  }
  bool(v) {
    this.op(v ? 0x88 : 0x89);
  }
  /** A dict of [key, writer] pairs. */
  dict(entries) {
    this.op(0x7d); // EMPTY_DICT
    const idx = this.memoize();
    if (!entries.length) return idx;
    this.op(0x28); // MARK
    for (const [k, w] of entries) {
      this.str(k);
      w();
    }
    this.op(0x75); // SETITEMS
    return idx;
  }
  /** A list written by calling item(i) for each i, in batches of 1000 as CPython does. */
  list(count, item) {
    this.op(0x5d); // EMPTY_LIST
    const idx = this.memoize();
    for (let lo = 0; lo < count; lo += 1000) {
      const hi = Math.min(count, lo + 1000);
      if (hi - lo === 1) {
        item(lo);
        this.op(0x61); // APPEND
        continue;
      }
      this.op(0x28);
      for (let i = lo; i < hi; i++) item(i);
      this.op(0x65); // APPENDS
    }
    return idx;
  }
  close() {
    this.op(0x2e); // STOP
    this.flush();
    closeSync(this.fd);
  }
}

// ---- the workload ---------------------------------------------------------------------

function stacks(layers) {
  // One stack per (layer, kind), 65 to 75 frames deep like PyTorch's with C++ stacks on
  // (unwinder, dispatcher and autograd frames, then the Python frames of a model and loop).
  const kinds = ['linear', 'attention', 'gelu', 'layernorm', 'grad', 'adam'];
  const native = Array.from({ length: 70 }, (_, i) => ({
    name: i === 0 ? 'torch::unwind::unwind()' : `at::native::(anonymous namespace)::kernel_${i}(at::Tensor const&, c10::DispatchKeySet)`,
    filename: i % 3 === 0 ? '??' : 'RegisterCUDA.cpp',
    line: 0,
  }));
  const out = [];
  for (let l = 0; l < layers; l++) {
    for (const k of kinds) {
      out.push([
        ...native.slice(0, 60 + ((l + kinds.indexOf(k)) % 10)),
        { name: `${k}_forward`, filename: `/opt/venv/lib/python3.12/site-packages/torch/nn/modules/${k}.py`, line: 100 + kinds.indexOf(k) },
        { name: '_call_impl', filename: '/opt/venv/lib/python3.12/site-packages/torch/nn/modules/module.py', line: 1790 },
        { name: 'forward', filename: '/work/model.py', line: 40 + (l % 8) },
        { name: 'train_step', filename: '/work/train.py', line: 77 },
        { name: '<module>', filename: '/work/train.py', line: 120 },
      ]);
    }
  }
  return out;
}

function main() {
  const { events: want, out, layers } = args();
  const addon = createRequire(path.join(root, 'package.json'))(process.env.VRAMLAB_ADDON ?? path.join(root, 'build/Release/vramlab.node'));
  const alloc = new addon.Allocator('sim:h100-80gb', '');
  const CHUNK = 200_000;
  alloc.setHistory(true, CHUNK * 4);
  const stackList = stacks(layers);
  const tmp = `${out}.tmp`;
  const w = new PickleOut(tmp);
  const frameMemo = new Map(); // frame object -> memo index of its dict
  const stackOf = new Map(); // address -> memo index of its free_requested's stack list
  const stackFrames = new Map(); // address -> its allocation's stack
  let written = 0;
  let t0 = 1_767_000_000_000_000; // µs since the epoch (2026)

  w.op(0x80);
  w.op(4); // PROTO 4
  w.op(0x7d);
  w.memoize();
  w.op(0x28);

  // device_traces first in the file, so the events stream before the final state exists.
  w.str('device_traces');
  w.op(0x5d);
  w.memoize(); // the outer list
  w.op(0x5d);
  w.memoize(); // device 0's list
  let batch = 0;

  const writeFrames = (st) => {
    w.op(0x5d);
    const idx = w.memoize();
    w.op(0x28);
    for (const f of st) {
      const known = frameMemo.get(f);
      if (known !== undefined) w.get(known);
      else {
        const idx = w.dict([
          ['name', () => w.str(f.name)],
          ['filename', () => w.str(f.filename)],
          ['line', () => w.int(f.line)],
        ]);
        frameMemo.set(f, idx);
      }
    }
    w.op(0x65);
    return idx;
  };
  const emit = (action, addr, size, st) => {
    if (batch === 0) w.op(0x28);
    w.dict([
      ['action', () => w.str(action)],
      ['addr', () => w.int(addr)],
      ['size', () => w.int(size)],
      ['stream', () => w.int(0)],
      ['time_us', () => w.int(t0)],
      // PyTorch 2.11 writes both on every event: a fresh 'N/A' string, the one '' string.
      ['compile_context', () => w.freshStr('N/A')],
      ['user_metadata', () => w.str('')],
      [
        'frames',
        () => {
          // As PyTorch's: a new list for the alloc and one for free_requested (the same
          // stack again), which free_completed then refers back to.
          if (action === 'alloc') {
            writeFrames(st);
            stackFrames.set(addr, st);
          } else if (action === 'free_requested') stackOf.set(addr, writeFrames(stackFrames.get(addr) ?? []));
          else if (action === 'free_completed') {
            const idx = stackOf.get(addr);
            if (idx !== undefined) w.get(idx);
            else writeFrames([]);
            stackOf.delete(addr);
            stackFrames.delete(addr);
          } else writeFrames([]);
        },
      ],
    ]);
    written++;
    if (++batch === 1000) {
      w.op(0x65);
      batch = 0;
    }
  };
  const stackByAddr = new Map();
  const drain = () => {
    for (const h of alloc.history()) {
      t0 += Math.max(1, Math.round((h.timeNs % 10_000) / 10));
      switch (h.action) {
        case 'alloc':
          emit('alloc', h.address, h.size, stackByAddr.get(h.address) ?? []);
          break;
        case 'free':
          emit('free_requested', h.address, h.size, null);
          emit('free_completed', h.address, h.size, null);
          break;
        case 'segment_alloc':
        case 'segment_free':
          emit(h.action, h.address, h.size, null);
          break;
        default:
          break;
      }
    }
    alloc.setHistory(false);
    alloc.setHistory(true, CHUNK * 4);
  };

  // Parameters and optimizer state, kept for the whole run.
  const MiB = 1 << 20;
  const keep = [];
  for (let l = 0; l < layers; l++) {
    for (const sz of [4 * MiB, 4 * MiB, 16 * MiB, 16 * MiB, 8192, 8192]) {
      const a = alloc.malloc(sz);
      stackByAddr.set(a, stackList[l * 6 + 5]);
      keep.push(a);
    }
  }
  let ops = 0;
  let step = 0;
  while (written < want) {
    // Forward: activations kept for backward, temporaries freed at once.
    const acts = [];
    const batchRows = 8 + (step % 5); // varying sequence lengths make the cache work
    for (let l = 0; l < layers && written < want; l++) {
      for (const [k, mult] of [
        [0, 3],
        [1, 2],
        [2, 1],
        [3, 1],
      ]) {
        const sz = batchRows * mult * 256 * 1024 + (l % 3) * 4096;
        const a = alloc.malloc(sz);
        stackByAddr.set(a, stackList[l * 6 + k]);
        acts.push(a);
      }
      const t = alloc.malloc(batchRows * 64 * 1024);
      stackByAddr.set(t, stackList[l * 6 + 1]);
      alloc.free(t);
      ops += 6;
    }
    // Backward: gradients of activations, activations released in reverse.
    for (let i = acts.length - 1; i >= 0; i--) {
      const g = alloc.malloc(1536 + (i % 7) * 512);
      stackByAddr.set(g, stackList[(Math.floor(i / 4) % layers) * 6 + 4]);
      alloc.free(acts[i]);
      alloc.free(g);
      ops += 3;
    }
    step++;
    if (ops > CHUNK / 3) {
      drain();
      ops = 0;
    }
  }
  drain();
  if (batch > 0) w.op(0x65);
  w.op(0x61); // APPEND device 0's list to the outer list

  // The final state: segments with their blocks.
  alloc.setHistory(false);
  const snap = alloc.snapshot();
  w.str('segments');
  w.list(snap.segments.length, (i) => {
    const g = snap.segments[i];
    w.dict([
      ['device', () => w.int(0)],
      ['address', () => w.int(g.address)],
      ['total_size', () => w.int(g.totalSize)],
      ['allocated_size', () => w.int(g.allocatedSize)],
      ['active_size', () => w.int(g.activeSize)],
      ['requested_size', () => w.int(g.requestedSize)],
      ['stream', () => w.int(0)],
      ['segment_type', () => w.str(g.pool)],
      ['is_expandable', () => w.bool(g.isExpandable)],
      [
        'blocks',
        () =>
          w.list(g.blocks.length, (j) => {
            const b = g.blocks[j];
            w.dict([
              ['address', () => w.int(b.address)],
              ['size', () => w.int(b.size)],
              ['requested_size', () => w.int(b.requestedSize)],
              ['state', () => w.str(b.state)],
              ['frames', () => writeFrames(b.state === 'inactive' ? [] : (stackByAddr.get(b.address) ?? []))],
            ]);
          }),
      ],
    ]);
  });
  w.op(0x75); // SETITEMS on the top dict
  w.close();
  renameSync(tmp, out);
  console.log(`wrote ${out}: ${written} events, ${snap.segments.length} segments, ${(w.bytes / 2 ** 20).toFixed(1)} MiB`);
}

main();

// The tensor playground through Host.handle, as both transports call it, on the real addon:
// every number below is what PyTorch's caching allocator does for the same commands.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Host } from '../../main/host/host';
import { registerPlaygroundMethods } from '../../main/host/playground_methods';
import type { PlaygroundSessions } from '../../main/host/playground_sessions';
import type { PlaygroundState } from '../../main/contract/playground';
import { native } from '../helpers/addon';

const MiB = 2 ** 20;
const BLOCK_1000x1000_F32 = 4_000_256; // 4,000,000 bytes rounded up to 512
const SEGMENT_20MiB = 20 * MiB; // a large-pool segment for a request under 10 MiB

let host: Host;
let sessions: PlaygroundSessions;
let nextId = 1;

async function call<T = PlaygroundState>(method: string, params?: unknown): Promise<T> {
  const res = await host.handle({ id: nextId++, method, params }, 'websocket');
  if (!res.ok) throw new Error(`${res.error.code}: ${res.error.message}`);
  return res.result as T;
}
async function failure(method: string, params?: unknown): Promise<{ code: string; message: string }> {
  const res = await host.handle({ id: nextId++, method, params }, 'ipc');
  expect(res.ok).toBe(false);
  return (res as { error: { code: string; message: string } }).error;
}

/** A session and a runner that fails the test on an unexpected error reply. */
async function session(params: Record<string, unknown> = {}) {
  const s = await call('playground.open', params);
  const run = async (command: string) => {
    const r = await call('playground.exec', { sessionId: s.sessionId, command });
    if (r.error) throw new Error(`"${command}" failed: ${r.output}`);
    return r;
  };
  const attempt = (command: string) => call('playground.exec', { sessionId: s.sessionId, command });
  return { s, run, attempt };
}

beforeAll(() => {
  host = new Host(native);
  sessions = registerPlaygroundMethods(host, native, { maxSessions: 3 });
});
afterAll(() => host.dispose());

describe('playground: allocator behaviour', () => {
  it('opens on an empty simulated device', async () => {
    const { s } = await session();
    expect(s).toMatchObject({
      device: 'sim:h100-80gb',
      output: '',
      error: false,
      allocated: 0,
      reserved: 0,
      maxAllocated: 0,
      tensors: [],
      segments: [],
    });
    expect(s.sessionId).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('randn(1000, 1000) takes one 512-rounded block in a 20 MiB large-pool segment', async () => {
    const { run } = await session();
    const r = await run('x = randn(1000, 1000)');
    expect(r.allocated).toBe(BLOCK_1000x1000_F32);
    expect(r.reserved).toBe(SEGMENT_20MiB);
    expect(r.tensors).toEqual([{ name: 'x', shape: [1000, 1000], dtype: 'float32', bytes: 4_000_000, view: false }]);
    // The segment map in the native Allocator.snapshot() shape: the block, then the free rest.
    expect(r.segments).toHaveLength(1);
    const seg = r.segments[0];
    expect(seg).toMatchObject({
      totalSize: SEGMENT_20MiB,
      allocatedSize: BLOCK_1000x1000_F32,
      requestedSize: 4_000_000,
      pool: 'large',
      isExpandable: false,
      stream: 0,
    });
    expect(seg.blocks.map((b) => [b.size, b.state])).toEqual([
      [BLOCK_1000x1000_F32, 'active_allocated'],
      [SEGMENT_20MiB - BLOCK_1000x1000_F32, 'inactive'],
    ]);
    expect(seg.blocks[0].address).toBe(seg.address);
    // Contexts use the run contract's category names: the user's tensors are inputs.
    expect(seg.blocks[0].context).toBe('inputs|randn|');
  });

  it('views add nothing, clones double, and del frees storage only when no view holds it', async () => {
    const { run } = await session();
    await run('x = randn(1000, 1000)');
    let r = await run('y = x.view(-1)');
    expect(r.allocated).toBe(BLOCK_1000x1000_F32);
    expect(r.tensors.find((t) => t.name === 'y')).toEqual({
      name: 'y',
      shape: [1_000_000],
      dtype: 'float32',
      bytes: 4_000_000,
      view: true,
    });
    r = await run('z = x.clone()');
    expect(r.allocated).toBe(2 * BLOCK_1000x1000_F32);
    expect(r.segments).toHaveLength(1); // the clone fits in the first segment's free rest
    r = await run('del x');
    expect(r.allocated).toBe(2 * BLOCK_1000x1000_F32); // y still holds x's storage
    expect(r.tensors.map((t) => t.name)).toEqual(['y', 'z']);
    r = await run('y');
    expect(r.output).toContain('tensor(shape=(1000000,), dtype=torch.float32');
    expect(r.output).toContain('# 4,000,000 bytes, a view\n');
    r = await run('del y');
    expect(r.allocated).toBe(BLOCK_1000x1000_F32);
    r = await run('del z');
    expect(r.allocated).toBe(0);
    expect(r.reserved).toBe(SEGMENT_20MiB); // cached, not returned
    expect(r.maxAllocated).toBe(2 * BLOCK_1000x1000_F32);
    r = await run('torch.cuda.empty_cache()');
    expect(r.reserved).toBe(0);
    expect(r.segments).toEqual([]);
  });

  it('rebinding builds the new tensor before releasing the old one, then reuses the freed block', async () => {
    const { run } = await session();
    const rounds: Array<[number, number, number]> = [];
    for (let i = 0; i < 4; i++) {
      const r = await run('t = randn(1000, 1000)');
      rounds.push([r.allocated, r.maxAllocated, r.reserved]);
    }
    expect(rounds).toEqual([
      [BLOCK_1000x1000_F32, BLOCK_1000x1000_F32, SEGMENT_20MiB],
      [BLOCK_1000x1000_F32, 2 * BLOCK_1000x1000_F32, SEGMENT_20MiB],
      [BLOCK_1000x1000_F32, 2 * BLOCK_1000x1000_F32, SEGMENT_20MiB],
      [BLOCK_1000x1000_F32, 2 * BLOCK_1000x1000_F32, SEGMENT_20MiB],
    ]);
    const r = await run('t = None');
    expect(r.allocated).toBe(0);
    expect(r.tensors).toEqual([]);
  });

  it('temporaries die as soon as the op that used them returns; unassigned results are freed', async () => {
    const { run } = await session();
    await run('x = randn(1000, 1000)');
    await run('reset_peak_memory_stats()');
    let r = await run('w = x.clone().clone()');
    expect(r.allocated).toBe(2 * BLOCK_1000x1000_F32);
    expect(r.maxAllocated).toBe(3 * BLOCK_1000x1000_F32); // the inner clone lived until the outer one was made
    r = await run('x.clone()');
    expect(r.allocated).toBe(2 * BLOCK_1000x1000_F32);
    expect(r.output).toMatch(/^tensor\(shape=\(1000, 1000\)/);
    r = await run('max_memory_allocated() - memory_allocated()');
    expect(r.output).toBe(String(BLOCK_1000x1000_F32));
  });

  it('t() and contiguous views cost nothing; reshape of a transposed tensor and contiguous() copy', async () => {
    const { run, attempt } = await session();
    await run('x = randn(1000, 1000)');
    let r = await run('a = x.t(); b = x.T; c = x.contiguous(); d = x.reshape(10, -1)');
    expect(r.allocated).toBe(BLOCK_1000x1000_F32);
    expect(r.tensors.find((t) => t.name === 'd')?.shape).toEqual([10, 100_000]);
    r = await attempt('a.view(-1)');
    expect(r.error).toBe(true);
    expect(r.output).toMatch(/^RuntimeError: view size is not compatible/);
    r = await run('e = a.reshape(-1)');
    expect(r.allocated).toBe(2 * BLOCK_1000x1000_F32);
    expect(r.tensors.find((t) => t.name === 'e')).toMatchObject({ shape: [1_000_000], view: false });
    r = await run('f = a.contiguous()');
    expect(r.allocated).toBe(3 * BLOCK_1000x1000_F32);
  });

  it('dtype conversions allocate at the new element size; to() the same dtype is the same tensor', async () => {
    const { run } = await session();
    await run('x = randn(1000, 1000)');
    let r = await run('h = x.half(); b = x.to(torch.bfloat16); same = x.to(float32)');
    // 2,000,000 bytes each, rounded to 512; x.to(float32) is x itself.
    expect(r.allocated).toBe(BLOCK_1000x1000_F32 + 2 * 2_000_384);
    expect(r.tensors.map((t) => [t.name, t.dtype, t.bytes])).toEqual([
      ['x', 'float32', 4_000_000],
      ['h', 'float16', 2_000_000],
      ['b', 'bfloat16', 2_000_000],
      ['same', 'float32', 4_000_000],
    ]);
    r = await run('z = zeros(1000, 1000, dtype=bfloat16); f = z.float()');
    expect(r.allocated).toBe(2 * BLOCK_1000x1000_F32 + 3 * 2_000_384);
    r = await run('same');
    expect(r.output).toContain('# storage shared with x');
  });

  it('matmul allocates its output, plus the cuBLAS workspace on the first one (32 MiB on Hopper)', async () => {
    const { run, attempt } = await session();
    await run('x = randn(1000, 1000); y = randn(1000, 1000)');
    let r = await run('w = x @ y');
    expect(r.allocated).toBe(3 * BLOCK_1000x1000_F32 + 32 * MiB);
    const workspace = r.segments.find((s) => s.totalSize === 32 * MiB)!;
    expect(workspace.blocks.map((b) => b.context.split('|')[0])).toEqual(['workspace']);
    r = await run('v = matmul(x, y)');
    expect(r.allocated).toBe(4 * BLOCK_1000x1000_F32 + 32 * MiB);
    // The fifth block takes the rest of the first 20 MiB segment whole: the allocator does not
    // split off a remainder under 1 MiB in the large pool, so allocated counts it too.
    r = await run('u = torch.mm(x, w.t())');
    expect(SEGMENT_20MiB - 4 * BLOCK_1000x1000_F32 - BLOCK_1000x1000_F32).toBeLessThan(MiB);
    expect(r.allocated).toBe(SEGMENT_20MiB + 32 * MiB);
    expect(r.segments.map((s) => s.totalSize).sort((a, b) => a - b)).toEqual([SEGMENT_20MiB, 32 * MiB]);
    r = await attempt('x @ randn(3, 4)');
    expect(r.error).toBe(true);
    expect(r.output).toBe('RuntimeError: mat1 and mat2 shapes cannot be multiplied (1000x1000 and 3x4)');
    expect(r.allocated).toBe(SEGMENT_20MiB + 32 * MiB); // the temporary operand was freed
    r = await attempt('x @ x.half()');
    expect(r.error).toBe(true);
    expect(r.output).toMatch(/same dtype/);
  });

  it("an OOM under a capacity cap gives PyTorch's message and leaves the session usable", async () => {
    const { run, attempt } = await session({ capacity: '64MiB' });
    await run('x = randn(1000, 1000)');
    const r = await attempt('big = randn(10000, 10000)');
    expect(r.error).toBe(true);
    expect(r.output).toMatch(
      /^torch\.OutOfMemoryError: CUDA out of memory\. Tried to allocate 382\.00 MiB\. GPU 0 has a total capacity of 79\.18 GiB/,
    );
    expect(r.output).toContain(
      '64.00 MiB allowed; Of the allocated memory 3.81 MiB is allocated by PyTorch, and 16.19 MiB is reserved by PyTorch but unallocated.',
    );
    expect(r.allocated).toBe(BLOCK_1000x1000_F32);
    expect(r.tensors.map((t) => t.name)).toEqual(['x']);
    expect((await run('y = x.clone()')).allocated).toBe(2 * BLOCK_1000x1000_F32);
  });

  it('reproduces the fragmentation lesson: default OOM, max_split_size_mb and expandable_segments', async () => {
    const setup =
      'big = randn(262144000); del big; p0 = randn(52428800); p1 = randn(52428800); p2 = randn(52428800); ' +
      'p3 = randn(52428800); p4 = randn(52428800); del p0; del p2; del p4';
    const ask = 'x = randn(104857600)'; // 400 MiB
    const plain = await session({ capacity: '1100MiB', alloc_conf: '' });
    await plain.run(setup);
    const oom = await plain.attempt(ask);
    expect(oom.error).toBe(true);
    expect(oom.output).toContain('400.00 MiB is allocated by PyTorch, and 600.00 MiB is reserved by PyTorch but unallocated');
    expect(oom.segments).toHaveLength(1); // three 200 MiB holes in the one 1000 MiB segment
    expect(oom.segments[0].blocks.filter((b) => b.state === 'inactive').map((b) => b.size)).toEqual([200 * MiB, 200 * MiB, 200 * MiB]);

    const split = await session({ capacity: '1100MiB', alloc_conf: 'max_split_size_mb:128' });
    await split.run(setup);
    const ok = await split.run(ask);
    expect(ok.allocated).toBe(800 * MiB);
    // Oversize cached blocks are released, largest first, until 400 MiB are free: two of the three.
    expect(ok.reserved).toBe(1000 * MiB);

    const exp = await session({ capacity: '1100MiB', alloc_conf: 'expandable_segments:True' });
    await exp.run(setup);
    const grown = await exp.run(ask);
    expect(grown.allocated).toBe(800 * MiB);
    expect(grown.reserved).toBe(800 * MiB); // free pages were unmapped and mapped where needed
    expect(grown.segments.every((s) => s.isExpandable)).toBe(true);
  });
});

describe('playground: commands and errors', () => {
  it('answers the memory functions, with or without torch.cuda.', async () => {
    const { run } = await session();
    await run('x = randn(1000, 1000)');
    expect((await run('memory_allocated()')).output).toBe('4000256');
    expect((await run('torch.cuda.memory_reserved()')).output).toBe(String(SEGMENT_20MiB));
    expect((await run('torch.cuda.max_memory_allocated()')).output).toBe('4000256');
    await run('del x');
    await run('torch.cuda.reset_peak_memory_stats()');
    expect((await run('max_memory_allocated()')).output).toBe('0');
    const summary = await run('memory_summary()');
    expect(summary.output).toContain('PyTorch CUDA memory summary, device ID 0');
    expect(summary.output).toMatch(/GPU reserved memory\s+\|\s+20480 KiB/);
  });

  it('prints shapes, dtypes, reprs, help and integer arithmetic', async () => {
    const { run } = await session();
    let r = await run('x = randn(2**10, 1024 * 2, dtype=torch.float16)');
    expect(r.tensors[0]).toEqual({ name: 'x', shape: [1024, 2048], dtype: 'float16', bytes: 4 * MiB, view: false });
    expect((await run('x.shape')).output).toBe('torch.Size([1024, 2048])');
    expect((await run('x.dtype')).output).toBe('torch.float16');
    expect((await run('print(x.size(-1), x.numel(), x.nbytes, x.is_contiguous(), 7 / 2, 7 // 2)')).output).toBe(
      '2048 2097152 4194304 True 3.5 3',
    );
    r = await run('x');
    expect(r.output).toBe(
      [
        "tensor(shape=(1024, 2048), dtype=torch.float16, device='sim:h100-80gb')",
        '# 4,194,304 bytes',
        `# storage 4,194,304 B in a 4,194,304 B block at 0x${r.segments[0].blocks[0].address.toString(16)}`,
      ].join('\n'),
    );
    r = await run('v = x.t(); v');
    expect(r.output.split('\n').slice(1, 2)).toEqual(['# 4,194,304 bytes, a view, not contiguous']);
    expect(r.output).toMatch(/\n# storage shared with x$/);
    expect((await run('help')).output).toContain('del x');
    expect((await run('help()')).output).toContain('empty_cache()');
    expect((await run('import torch')).output).toBe('');
    expect((await run('   # nothing')).output).toBe('');
  });

  it('turns bad syntax, unknown names, shape errors and misuse into error replies', async () => {
    const { run, attempt } = await session();
    await run('x = randn(1000, 1000)');
    const cases: Array<[string, RegExp]> = [
      ['x = ', /^SyntaxError: invalid syntax: expected an expression, found end of line \(column 5\)$/],
      ['x = randn(10', /^SyntaxError: /],
      ['q', /^NameError: name 'q' is not defined$/],
      ['del q', /^NameError: name 'q' is not defined$/],
      ['y = q.view(-1)', /^NameError: name 'q' is not defined$/],
      ['x.view(7)', /^RuntimeError: shape '\[7\]' is invalid for input of size 1000000$/],
      ['x.view(-1, -1)', /^RuntimeError: only one dimension can be inferred$/],
      ['randn(-5)', /^RuntimeError: Trying to create tensor with negative dimension -5: \[-5\]$/],
      ['randn(1.5)', /^TypeError: randn\(\): argument 'size' must be tuple of ints, but found element of type float at pos 0$/],
      ['randn(10, dtype=int64)', /^TypeError: dtype int64 is not supported/],
      ['randn(10, device="cpu")', /^ValueError: .*CPU tensors are not modelled/],
      ['randn(10, bogus=1)', /^TypeError: randn\(\) got an unexpected keyword argument 'bogus'$/],
      ['randn(10**12, 10**12)', /^RuntimeError: Storage size calculation overflowed/],
      ['x * 2', /^TypeError: unsupported operand type\(s\) for \*: 'Tensor' and 'int'/],
      ['x.frobnicate()', /^AttributeError: 'Tensor' object has no attribute 'frobnicate'/],
      ['x.view', /^TypeError: Tensor.view is a method/],
      ['torch.nn.Linear(3, 4)', /^AttributeError: module 'torch.nn' has no attribute 'Linear'/],
      ['randn = 3', /^TypeError: cannot assign to 'randn'/],
      ['__import__("os").system("true")', /^NameError: name '__import__' is not defined$/],
      ['open("/etc/passwd")', /^NameError: name 'open' is not defined$/],
      ['x[0]', /^SyntaxError: indexing and slicing/],
      ['1 // 0', /^ZeroDivisionError/],
      ['2 ** 80', /^ValueError: integer too large/],
    ];
    for (const [command, message] of cases) {
      const r = await attempt(command);
      expect(r.error, command).toBe(true);
      expect(r.output, command).toMatch(message);
      expect(r.allocated, command).toBe(BLOCK_1000x1000_F32);
    }
    // A failing statement stops the line; the ones before it ran.
    const partial = await attempt('a = x.clone(); b = q; c = x.clone()');
    expect(partial.error).toBe(true);
    expect(partial.tensors.map((t) => t.name)).toEqual(['x', 'a']);
    expect(partial.allocated).toBe(2 * BLOCK_1000x1000_F32);
  });
});

describe('playground: sessions', () => {
  it('rejects bad settings with clear messages', async () => {
    expect((await failure('playground.open', { device: 'sim:nope' })).message).toMatch(/nope/);
    expect((await failure('playground.open', { alloc_conf: 'max_split_size_mb:abc' })).message).toMatch(/max_split_size_mb/);
    expect((await failure('playground.open', { capacity: 'lots' })).message).toMatch(/capacity "lots" is not a size/);
    expect((await failure('playground.open', { capacity: '2000TiB' })).message).toMatch(/from 1 MiB to 1 PiB/);
    expect((await failure('playground.open', { capacity: '100GiB' })).message).toMatch(/more than sim:h100-80gb has/);
    expect((await failure('playground.open', { capacity: '1GiB', alloc_conf: 'per_process_memory_fraction:0.5' })).message).toMatch(
      /not both/,
    );
    expect((await failure('playground.open', { bogus: 1 })).code).toBe('invalid_params');
    expect((await failure('playground.exec', { sessionId: 'nope', command: 'x = randn(3)' })).message).toMatch(
      /no playground session "nope"/,
    );
    expect((await failure('playground.exec', { sessionId: 'x', command: 'y'.repeat(3000) })).code).toBe('invalid_params');
  });

  it('keeps at most maxSessions, closing the oldest, and closes on request', async () => {
    sessions.closeAll();
    const opened: PlaygroundState[] = [];
    for (let i = 0; i < 4; i++) opened.push(await call('playground.open', { device: 'sim:h100-80gb' }));
    expect(sessions.size).toBe(3);
    expect((await failure('playground.exec', { sessionId: opened[0].sessionId, command: 'x = randn(3)' })).message).toMatch(
      /closed, or replaced/,
    );
    const r = await call('playground.exec', { sessionId: opened[3].sessionId, command: 'x = randn(3)' });
    expect(r.allocated).toBe(512);
    expect(await call('playground.close', { sessionId: opened[3].sessionId })).toEqual({ closed: true });
    expect(await call('playground.close', { sessionId: opened[3].sessionId })).toEqual({ closed: false });
    expect(sessions.size).toBe(2);
  });

  it('closes every session when the host is disposed', async () => {
    const h = new Host(native);
    const own = registerPlaygroundMethods(h, native);
    for (let i = 0; i < 2; i++) {
      const res = await h.handle({ id: i, method: 'playground.open', params: {} }, 'ipc');
      expect(res.ok).toBe(true);
    }
    expect(own.size).toBe(2);
    h.dispose();
    expect(own.size).toBe(0);
  });
});

describe('playground: random command lines', () => {
  it('never fails the request, and leaks no temporary: deleting every name frees all but the cuBLAS workspace', async () => {
    // A seeded mix of valid and broken statements built from the playground's own vocabulary.
    let seed = 12345;
    const rnd = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    const names = ['a', 'b', 'c', 'd'];
    const pick = <T>(xs: T[]) => xs[rnd(xs.length)];
    const dim = () => pick(['64', '128', '-1', '0', '3', '2**7', '1.5', 'a', '(64, 2)']);
    const tensor = (depth: number): string => {
      if (depth > 2 || rnd(3) === 0) return pick(names);
      switch (rnd(9)) {
        case 0:
          return `randn(${dim()}, ${dim()})`;
        case 1:
          return `zeros(${dim()}, dtype=${pick(['float16', 'torch.bfloat16', 'int64', 'float32'])})`;
        case 2:
          return `${tensor(depth + 1)}.view(${dim()})`;
        case 3:
          return `${tensor(depth + 1)}.t()`;
        case 4:
          return `${tensor(depth + 1)}.clone()`;
        case 5:
          return `${tensor(depth + 1)} @ ${tensor(depth + 1)}`;
        case 6:
          return `${tensor(depth + 1)}.${pick(['half()', 'float()', 'contiguous()', 'reshape(-1)', 'to(bfloat16)'])}`;
        case 7:
          return `(${tensor(depth + 1)})`;
        default:
          return `${tensor(depth + 1)}${pick(['[0]', ' *', '.', ')', ' + 1', ''])}`;
      }
    };
    const statement = () => {
      switch (rnd(6)) {
        case 0:
          return `del ${pick(names)}`;
        case 1:
          return pick(['empty_cache()', 'memory_allocated()', 'memory_summary()', 'reset_peak_memory_stats()', 'help', '']);
        case 2:
          return tensor(0);
        default:
          return `${pick(names)} = ${tensor(0)}`;
      }
    };
    const { s } = await session();
    let errors = 0;
    for (let i = 0; i < 400; i++) {
      const command = rnd(4) === 0 ? `${statement()}; ${statement()}` : statement();
      const res = await host.handle({ id: nextId++, method: 'playground.exec', params: { sessionId: s.sessionId, command } }, 'ipc');
      expect(res.ok, command).toBe(true);
      if (res.ok && (res.result as PlaygroundState).error) errors++;
    }
    expect(errors).toBeGreaterThan(20); // the mix does exercise the error paths
    const last = await call('playground.exec', { sessionId: s.sessionId, command: 'a = b = c = d = None' });
    expect(last.error).toBe(false);
    expect(last.tensors).toEqual([]);
    expect(last.maxAllocated).toBeGreaterThan(0);
    const workspace = last.segments.flatMap((g) => g.blocks).filter((b) => b.state === 'active_allocated');
    expect(workspace.every((b) => b.context.startsWith('workspace|'))).toBe(true);
    expect(last.allocated).toBe(workspace.reduce((n, b) => n + b.size, 0));
  });
});

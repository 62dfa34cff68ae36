// Pickles that cost far more to decode than their size says are refused, quickly, with a PickleError:
//  1. reference amplification ("billion laughs"): 12 KB that expanded to 9M trace events
//     (800 MB, 3 s) in every path that loads a snapshot; a little larger killed the process.
//  2. deep nesting / engine limits: a nested tuple key overflowed the call stack and a
//     flood of memo entries hit V8's Map size limit, both escaping as untyped errors.
//  3. a text argument over the 1 MiB file window grew the window a byte at a time.
// Every entry point is exercised: the reader, snapshot import (the app's Open), the host's
// upload method (IPC and WebSocket share it), and the CLI's replay and export commands.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PickleError } from '../../main/snapshot/pickle/errors';
import { writePickle } from '../../main/snapshot/pickle/writer';
import type { PickleValue } from '../../main/snapshot/pickle/values';
import { DEFAULT_LIMITS, readPickle, readPickleFile } from '../../main/snapshot/pickle/reader';
import { loadSnapshotBuffer, loadSnapshotFile } from '../../main/snapshot/import';
import { Host } from '../../main/host/host';
import { registerSnapshotMethods } from '../../main/host/snapshot_methods';
import { main } from '../../main/cli/main';
import { native } from '../helpers/addon';
import { captureIO } from '../helpers/io';
import { deepTupleKey, emptyDicts, laughsSnapshot, longTextArg, memoFlood } from '../helpers/pickles';

let dir = '';
beforeAll(() => void (dir = mkdtempSync(path.join(os.tmpdir(), 'vramlab-hostile-'))));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A snapshot of n alloc/free pairs, each with a new stack list that its free refers back to (PyTorch's layout). */
function traceOnly(pairs: number): Buffer {
  const frame = new Map<string, PickleValue>([
    ['name', 'f'],
    ['filename', 'train.py'],
    ['line', 3],
  ]);
  const events: PickleValue[] = [];
  for (let i = 0; i < pairs; i++) {
    const frames = [frame, frame, frame];
    const ev = (action: string) =>
      new Map<string, PickleValue>([
        ['action', action],
        ['addr', 2 ** 40 + i * 512],
        ['size', 512],
        ['stream', 0],
        ['time_us', 2 ** 50 + i],
        ['frames', frames],
      ]);
    events.push(ev('alloc'), ev('free_completed'));
  }
  return writePickle(
    new Map<string, PickleValue>([
      ['segments', []],
      ['device_traces', [events]],
    ]),
  );
}

function pickleError(f: () => unknown): PickleError {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(PickleError);
    return e as PickleError;
  }
  throw new Error('expected a PickleError');
}

describe('reference amplification is bounded', () => {
  const laughs = laughsSnapshot();

  it('a 12 KB billion-laughs snapshot is refused by the reader, quickly and without growing memory', () => {
    expect(laughs.length).toBeLessThan(16_000);
    const rss0 = process.memoryUsage().rss;
    const t0 = performance.now();
    const e = pickleError(() => readPickle(laughs));
    expect(e.code).toBe('limit');
    expect(e.message).toMatch(/expands to more than .* values/);
    expect(e.offset).toBe(laughs.length - 1); // STOP: the walk runs once the value is whole
    expect(performance.now() - t0).toBeLessThan(1000); // before: 2.8 s, 800 MB, 9M events
    expect(process.memoryUsage().rss - rss0).toBeLessThan(200e6);
  });

  it('app import (loadSnapshotBuffer / loadSnapshotFile) refuses it', () => {
    const file = path.join(dir, 'laughs.pickle');
    writeFileSync(file, laughs);
    expect(pickleError(() => loadSnapshotBuffer(laughs)).code).toBe('limit');
    expect(pickleError(() => loadSnapshotFile(file)).code).toBe('limit');
  });

  it('host upload (IPC and WebSocket) answers an error and the host keeps serving', async () => {
    const host = new Host(native);
    registerSnapshotMethods(host, native);
    for (const transport of ['ipc', 'websocket'] as const) {
      const res = await host.handle(
        {
          id: 1,
          method: 'snapshot.upload',
          params: { uploadId: `u-${transport}`, index: 0, total: 1, chunk: laughs.toString('base64'), name: 'laughs.pickle' },
        },
        transport,
      );
      expect(res.ok).toBe(false);
      expect(!res.ok && res.error.message).toMatch(/billion laughs/);
    }
    expect((await host.handle({ id: 2, method: 'snapshot.list' }, 'ipc')).ok).toBe(true);
    host.dispose();
  });

  it('CLI replay and export --from-replay fail with the reader error, exit 1', async () => {
    const file = path.join(dir, 'laughs-cli.pickle');
    writeFileSync(file, laughs);
    for (const args of [
      ['replay', file],
      ['snapshot', 'export', '--from-replay', file, '-o', path.join(dir, 'out.pickle')],
    ]) {
      const io = captureIO();
      expect(await main(args, io)).toBe(1);
      // The CLI streams snapshots (trace events consumed as read): the repeated event is
      // refused at its second reference, before anything expands.
      expect(io.stderr()).toMatch(/already consumed \(a trace event used twice\).*"billion laughs"/);
    }
  });

  it('a real PyTorch snapshot stays far below the bound (about 1.3 values per byte vs 64)', () => {
    const real = path.resolve(__dirname, '../fixtures/torch/resnet18_sgd.pickle');
    expect(() => readPickleFile(real, { limits: { maxValues: 0, maxValuesPerByte: 2 } })).not.toThrow();
  });
});

describe('nesting and engine limits end as PickleErrors with a position', () => {
  it('a dict key of tuples nested 500,000 deep (was: RangeError, call stack exceeded)', () => {
    const data = deepTupleKey(500_000);
    const e = pickleError(() => readPickle(data));
    expect(e.code).toBe('limit');
    expect(e.offset).toBeGreaterThanOrEqual(0);
    expect(e.message).toMatch(/offset \d+/);
  });

  // 16.7M Map insertions take ~18 s on 2 cores: run with VRAMLAB_SLOW_TESTS=1.
  it.runIf(process.env.VRAMLAB_SLOW_TESTS === '1')(
    'more memo entries than a JS Map can hold (was: RangeError: Map maximum size exceeded)',
    () => {
      const data = memoFlood((1 << 24) + 16);
      const e = pickleError(() => readPickle(data, { limits: { maxMemo: Infinity, maxHeapBytes: Infinity } }));
      expect(e.code).toBe('limit');
      expect(e.message).toMatch(/MEMOIZE .* at offset \d+: .*too large/);
      expect(e.offset).toBeGreaterThan(1 << 23);
    },
  );
});

describe('the decoded size stays inside a heap budget', () => {
  // 29.9M empty dicts, 2 bytes each: under the container bound, yet it took 4.5 GB of
  // heap and aborted the process after 36 s (10M dicts: 2.2 GB).
  const dicts = emptyDicts(29_900_000);

  it('60 MB of empty dicts end in a typed limit error long before the heap is exhausted', () => {
    expect(dicts.length).toBeGreaterThan(59e6);
    const heap0 = process.memoryUsage().heapUsed;
    const e = pickleError(() => readPickle(dicts));
    expect(e.code).toBe('limit');
    expect(e.message).toMatch(/EMPTY_DICT .* at offset \d+: the decoded values would take more than \d+ bytes of JavaScript heap/);
    // Refused after a fraction of the file: at most the budget's worth of dicts was built.
    expect(e.offset).toBeLessThan(dicts.length / 2);
    expect(process.memoryUsage().heapUsed - heap0).toBeLessThan(DEFAULT_LIMITS.maxHeapBytes * 2);
  });

  it('the app import refuses it the same way', () => {
    const file = path.join(dir, 'dicts.pickle');
    writeFileSync(file, emptyDicts(2_000_000));
    const e = pickleError(() => loadSnapshotFile(file, { limits: { maxHeapBytes: 64 << 20 } }));
    expect(e.code).toBe('limit');
    expect(e.message).toMatch(/would take more than 67108864 bytes/);
  });

  it('a streamed snapshot gives back what its consumed events took: a long trace opens in a budget its decoded dicts would exceed', () => {
    const bytes = traceOnly(20_000); // 40,000 events
    const limits = { maxHeapBytes: 4 << 20 };
    expect(pickleError(() => readPickle(bytes, { limits })).code).toBe('limit'); // every event decoded at once
    expect(loadSnapshotBuffer(bytes, { limits }).deviceTraces[0]).toHaveLength(40_000);
  });
});

describe('long text arguments are read in linear time', () => {
  it('an 8 MiB text argument streams from a file in well under a second per MiB', () => {
    const file = path.join(dir, 'long.pickle');
    writeFileSync(file, longTextArg(8 << 20));
    const t0 = performance.now();
    const v = readPickleFile(file); // 1 MiB window: the argument spans 8 windows
    const ms = performance.now() - t0;
    expect(v).toHaveLength(8 << 20);
    expect(ms).toBeLessThan(3000); // before: one read() per byte past 1 MiB, many minutes
  });

  it('a long text float does not backtrack', () => {
    const data = Buffer.concat([Buffer.from('F'), Buffer.alloc(200_000, 0x31), Buffer.from('x\n.')]);
    const t0 = performance.now();
    expect(pickleError(() => readPickle(data)).code).toBe('limit');
    const e = pickleError(() => readPickle(data, { limits: { maxTextNumber: Infinity } }));
    expect(e.message).toMatch(/bad float/);
    expect(performance.now() - t0).toBeLessThan(1000);
  });
});

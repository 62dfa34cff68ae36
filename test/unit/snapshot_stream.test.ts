// Streaming open (main/snapshot/stream_load.ts): trace events go into typed arrays as they
// are read. The result must be the very snapshot the plain read gives, and misuse of the
// streamed values (an event referenced twice, events outside device_traces) a clear error.
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { compactData } from '../../main/snapshot/compact_trace';
import { loadSnapshotBuffer, loadSnapshotFile, loadSnapshotFileDecoded, SnapshotFormatError } from '../../main/snapshot/import';
import { writePickle } from '../../main/snapshot/pickle/writer';
import type { PickleValue } from '../../main/snapshot/pickle/values';

const FIX = path.resolve(__dirname, '../fixtures/torch');
const NAMES = ['mlp_adam', 'resnet18_sgd', 'gpt_late_start', 'gpt_ring_truncated', 'residual_oom_capped'];

const dict = (o: Record<string, PickleValue>) => new Map<string, PickleValue>(Object.entries(o));
const ev = (action: string, addr: number, size: number) => dict({ action, addr, size, stream: 0, time_us: 5, frames: [] });

describe('streamed snapshots', () => {
  for (const name of NAMES) {
    it(`${name}: the same snapshot as the plain read, its trace in typed arrays`, () => {
      const file = path.join(FIX, `${name}.pickle`);
      let calls = 0;
      let last = 0;
      const streamed = loadSnapshotFile(file, {
        onProgress: (p) => {
          calls++;
          expect(p.bytes).toBeGreaterThanOrEqual(last);
          expect(p.bytes).toBeLessThanOrEqual(p.total);
          last = p.bytes;
        },
      });
      const plain = loadSnapshotFileDecoded(file);
      const trace = streamed.deviceTraces[0];
      expect(compactData(trace)).not.toBeNull();
      expect(compactData(plain.deviceTraces[0])).toBeNull();
      expect(trace.length).toBe(plain.deviceTraces[0].length);
      expect([...trace]).toEqual(plain.deviceTraces[0]);
      expect(streamed.segments).toEqual(plain.segments);
      expect(calls).toBeGreaterThan(0);
      // Events that share a stack share one Frames (interned), as the views rely on.
      const allocs = trace.filter((e) => e.action === 'alloc');
      expect(new Set(allocs.map((e) => e.frames)).size).toBeLessThan(allocs.length);
    });
  }

  it('the trace view is read-only', () => {
    const s = loadSnapshotFile(path.join(FIX, 'mlp_adam.pickle'));
    expect(() => {
      (s.deviceTraces[0] as unknown as unknown[])[0] = null;
    }).toThrow(/read-only/);
  });

  it('an event dict referenced again after it was consumed is refused clearly', () => {
    const e1 = ev('alloc', 4096, 512);
    const root = dict({ device_traces: [[e1, ev('free_completed', 4096, 512)]], later: e1 });
    expect(() => loadSnapshotBuffer(writePickle(root))).toThrow(/already consumed \(a trace event used twice\)/);
  });

  it('event dicts outside device_traces are refused', () => {
    const root = dict({ segments: [], device_traces: [[ev('alloc', 4096, 512)]], stray: [ev('alloc', 8192, 512)] });
    expect(() => loadSnapshotBuffer(writePickle(root))).toThrow(/trace events .* found outside device_traces/);
  });

  it('a bad event is reported with its place', () => {
    const root = dict({ device_traces: [[ev('alloc', 4096, 512), dict({ action: 'alloc', addr: -5, size: 1 })]] });
    expect(() => loadSnapshotBuffer(writePickle(root))).toThrow(/device_traces\[…\]\[1\]\.addr: expected an address \(>= 0\), got -5/);
  });

  it('a malformed event reports its real cause, not a size limit', () => {
    const bad: [PickleValue, RegExp][] = [
      [dict({ action: 'launch', addr: 4096, size: 1 }), /\[1\]\.action: expected one of alloc, .*, got a str \("launch"\)/],
      [dict({ action: 'alloc', addr: 4096, size: 'big' }), /\[1\]\.size: expected an int, got a str \("big"\)/],
      [dict({ action: 'alloc', addr: 4096, size: 1, frames: 7 }), /\[1\]\.frames: expected a list, got number 7/],
      [dict({ action: 'alloc', addr: 4096, size: 1, stream: 1.5 }), /\[1\]\.stream: expected an int, got number 1.5/],
    ];
    for (const [e, message] of bad) {
      const root = dict({ device_traces: [[ev('alloc', 4096, 512), e]] });
      let err: unknown;
      try {
        loadSnapshotBuffer(writePickle(root));
      } catch (x) {
        err = x;
      }
      expect(err).toBeInstanceOf(SnapshotFormatError); // was: a PickleError 'limit'
      expect((err as Error).message).toMatch(message);
      expect((err as Error).message).not.toMatch(/too large or too deeply nested/);
    }
  });
});

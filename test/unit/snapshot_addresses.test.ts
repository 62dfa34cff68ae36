// Addresses above 2^53 do not fit a double: the snapshot stores them relative to a base
// (the lowest address, 1 MiB aligned). The streaming open keeps each event's whole address
// while it reads and applies the base once the file is read: one decode, whatever the
// addresses, with the trace still in typed arrays.
import { describe, expect, it } from 'vitest';
import { compactData } from '../../main/snapshot/compact_trace';
import { snapshotFromPickle } from '../../main/snapshot/from_pickle';
import { loadSnapshotBuffer, SnapshotFormatError } from '../../main/snapshot/import';
import { readPickle } from '../../main/snapshot/pickle/reader';
import { writePickle } from '../../main/snapshot/pickle/writer';
import type { PickleValue } from '../../main/snapshot/pickle/values';
import { windowStart } from '../../main/snapshot/window_start';

const MB = 1 << 20;
const dict = (o: Record<string, PickleValue>) => new Map<string, PickleValue>(Object.entries(o));
const frames = [dict({ name: 'step', filename: 'train.py', line: 7 })];
const ev = (action: string, addr: bigint | number, size: number) => dict({ action, addr, size, stream: 0, time_us: 1, frames });
const seg = (address: bigint, blocks: [bigint, number, string][]) =>
  dict({
    device: 0,
    address,
    total_size: blocks.reduce((n, b) => n + b[1], 0),
    stream: 0,
    segment_type: 'large',
    blocks: blocks.map(([a, size, state]) => dict({ address: a, size, requested_size: state === 'inactive' ? 0 : size, state, frames })),
  });

/** A consistent snapshot at `base`: one live 2 MiB block, one freed, and an earlier segment freed below them all. */
function snapshotAt(base: bigint): Buffer {
  const a = base + 4n * BigInt(MB);
  const low = base; // a segment the trace freed: lower than every final one
  const events = [
    ev('segment_alloc', low, 2 * MB),
    ev('segment_free', low, 2 * MB),
    ev('segment_alloc', a, 4 * MB),
    ev('alloc', a, 2 * MB),
    ev('alloc', a + 2n * BigInt(MB), 2 * MB),
    ev('free_requested', a + 2n * BigInt(MB), 2 * MB),
    ev('free_completed', a + 2n * BigInt(MB), 2 * MB),
    dict({ action: 'oom', addr: 0, size: 64 * MB, stream: 0, time_us: 2, device_free: 0, frames }),
  ];
  return writePickle(
    dict({
      segments: [
        seg(a, [
          [a, 2 * MB, 'active_allocated'],
          [a + 2n * BigInt(MB), 2 * MB, 'inactive'],
        ]),
      ],
      device_traces: [events],
    }),
  );
}

describe('snapshot addresses above 2^53', () => {
  it('a consistent snapshot with every address at or above 2^60 opens, in one decode, relative to its lowest address', () => {
    const base = 1n << 60n;
    const bytes = snapshotAt(base);
    const s = loadSnapshotBuffer(bytes); // was: "too large or too deeply nested to read"
    expect(s.addressBase).toBe(base);
    const trace = s.deviceTraces[0];
    expect(compactData(trace)).not.toBeNull(); // streamed: events in typed arrays, no second decode
    expect(trace.map((e) => e.addr)).toEqual([0, 0, 4 * MB, 4 * MB, 6 * MB, 6 * MB, 6 * MB, 0]);
    expect(s.segments[0].address).toBe(4 * MB);
    // The same snapshot as the whole-file decode gives.
    const plain = snapshotFromPickle(readPickle(bytes));
    expect([...trace]).toEqual(plain.deviceTraces[0]);
    expect(s.segments).toEqual(plain.segments);
    expect(windowStart(s, 0).problems).toEqual([]);
  });

  it('one segment above 2^53 among low ones keeps the streamed trace (no second decode)', () => {
    const low = 0x7f00_0000_0000n;
    const high = (1n << 53n) + 64n * BigInt(MB);
    const bytes = writePickle(
      dict({
        segments: [seg(low, [[low, 2 * MB, 'active_allocated']]), seg(high, [[high, 2 * MB, 'inactive']])],
        device_traces: [[ev('alloc', low, 2 * MB), ev('segment_alloc', high, 2 * MB)]],
      }),
    );
    const s = loadSnapshotBuffer(bytes);
    expect(compactData(s.deviceTraces[0])).not.toBeNull(); // before: decoded again, as plain dicts
    expect(s.addressBase).toBe(low);
    expect(s.deviceTraces[0].map((e) => e.addr)).toEqual([0, Number(high - low)]);
    expect(s.segments.map((g) => g.address)).toEqual([0, Number(high - low)]);
  });

  it('addresses spanning more than 2^53 are refused with the event that falls outside, not as a size limit', () => {
    const bytes = writePickle(dict({ segments: [], device_traces: [[ev('alloc', 1n << 62n, 512), ev('alloc', 4096, 512)]] }));
    let err: unknown;
    try {
      loadSnapshotBuffer(bytes);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(SnapshotFormatError);
    expect((err as Error).message).toMatch(
      /device_traces\[0\]\[0\]\.addr: address 4611686018427387904 is outside the range this snapshot spans/,
    );
    expect((err as Error).message).not.toMatch(/too large or too deeply nested/);
  });

  it('an address beyond 64 bits is refused as such', () => {
    const bytes = writePickle(dict({ segments: [], device_traces: [[ev('alloc', 1n << 64n, 512)]] }));
    expect(() => loadSnapshotBuffer(bytes)).toThrow(/device_traces\[…\]\[0\]\.addr: address 18446744073709551616 is not a 64-bit address/);
  });
});

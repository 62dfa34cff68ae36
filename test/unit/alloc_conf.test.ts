// PYTORCH_CUDA_ALLOC_CONF has one TypeScript reader (main/contract/alloc_conf.ts) and it reads
// every string as the engine's parser does (native/allocator/settings.cpp, through the real
// addon): the same strings accepted, the same messages for the refused, the same rounding
// from roundup_power2_divisions (a [..] list included), and the spec, the panel form and the
// what-if editor all go through it.
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { loadAddon } from '../../main/addon/load';
import { ALLOCATOR_CONSTANTS } from '../../main/contract/allocator';
import { allocConfItems, parseAllocConf, withAllocConfItem, withoutAllocConfKey } from '../../main/contract/alloc_conf';
import { checkSpec } from '../../main/contract/spec';
import { roundSize } from '../../main/snapshot/window_start';
import type { SnapshotAllocatorSettings } from '../../main/snapshot/model';
import { defaultForm, formToSpec, specToForm } from '../../renderer/src/lib/specForm';

const addon = loadAddon();
const { smallSize, minLargeAlloc, roundLarge } = ALLOCATOR_CONSTANTS;

/** The block a fresh allocator hands out for a rounded large request: a segment of its own
 *  from 10 MiB on (rounded to 2 MiB), keeping a remainder of at most 1 MiB unsplit. */
function firstBlock(rounded: number): number {
  if (rounded < minLargeAlloc) return rounded;
  const segment = Math.ceil(rounded / roundLarge) * roundLarge;
  return segment - rounded > smallSize ? rounded : segment;
}
const DEVICE = 'sim:h100-80gb';

function native(conf: string): string {
  try {
    new addon.Allocator(DEVICE, conf);
    return 'ok';
  } catch (err) {
    return (err as Error).message;
  }
}
function ours(conf: string): string {
  try {
    parseAllocConf(conf);
    return 'ok';
  } catch (err) {
    return (err as Error).message;
  }
}

const STRINGS = [
  '',
  'expandable_segments:True',
  'expandable_segments:False',
  'expandable_segments:true',
  'max_split_size_mb:128,expandable_segments:True',
  ' max_split_size_mb : 256 , garbage_collection_threshold : 0.8 ',
  'max_split_size_mb:19',
  'max_split_size_mb:20',
  'max_split_size_mb:abc',
  'max_split_size_mb:-1',
  'max_split_size_mb:99999999999999999999999',
  'large_segment_size_mb:64,max_split_size_mb:32',
  'max_split_size_mb:64,large_segment_size_mb:64',
  'large_segment_size_mb:10',
  'max_non_split_rounding_mb:40',
  'garbage_collection_threshold:1',
  'garbage_collection_threshold:0',
  'garbage_collection_threshold:0.5x',
  'garbage_collection_threshold:5e-1',
  'roundup_power2_divisions:4',
  'roundup_power2_divisions:3',
  'roundup_power2_divisions:0',
  'roundup_power2_divisions:[256:1,>:4]',
  'roundup_power2_divisions:[1:2,2:4,4:8,>:16],expandable_segments:True',
  'roundup_power2_divisions:[64:8,256:4,1024:2,>:1]',
  'roundup_power2_divisions:[3:4]',
  'roundup_power2_divisions:[256:3]',
  'roundup_power2_divisions:[256:0,>:4]',
  'roundup_power2_divisions:[256:1',
  'roundup_power2_divisions:[256:1 512:2]',
  'per_process_memory_fraction:0.5',
  'per_process_memory_fraction:1.5',
  'backend:native',
  'backend:cudaMallocAsync',
  'backend:other',
  'release_lock_on_cudamalloc:True',
  'pinned_num_register_threads:8',
  'pinned_num_register_threads:6',
  'max_split_size:128',
  'expandable_segments',
  'expandable_segments:True,',
  ',expandable_segments:True',
  'expandable_segments:True,,max_split_size_mb:128',
  'expandable_segments:True max_split_size_mb:128',
  'constructor:1',
];

describe('alloc_conf: one reader, the engine’s', () => {
  it.each(STRINGS)('reads %j as the engine does', (conf) => {
    expect(ours(conf)).toBe(native(conf));
  });

  it('agrees with the engine on random strings built from its tokens', () => {
    const token = fc.constantFrom(
      'expandable_segments',
      'max_split_size_mb',
      'roundup_power2_divisions',
      'garbage_collection_threshold',
      'True',
      '128',
      '4',
      '0.5',
      '>',
      ':',
      ',',
      '[',
      ']',
      ' ',
    );
    fc.assert(
      fc.property(fc.array(token, { maxLength: 12 }), (parts) => {
        const conf = parts.join('');
        expect(ours(conf)).toBe(native(conf));
      }),
      { seed: 25, numRuns: 400 },
    );
  });

  it.each([
    'roundup_power2_divisions:[256:1,>:4]',
    'roundup_power2_divisions:[1:2,2:4,4:8,>:16]',
    'roundup_power2_divisions:[64:8,256:4,1024:2,>:1]',
    'roundup_power2_divisions:8',
  ])('rounds requests under %s as the engine does', (conf) => {
    const settings = { roundupPower2Divisions: parseAllocConf(conf).roundupPower2Divisions } as SnapshotAllocatorSettings;
    for (const size of [3_000_000, 5_000_001, 70_000_003, 300_000_007, 1_500_000_011, 3_000_000_019]) {
      const a = new addon.Allocator(DEVICE, conf);
      a.malloc(size);
      expect(a.memoryAllocated(), `${conf}: ${size} B`).toBe(firstBlock(roundSize(size, settings)));
    }
  });

  it('reads a divisions list as one value (the old split on "," and ":" misread it)', () => {
    const conf = 'roundup_power2_divisions:[256:1,>:4],max_split_size_mb:128';
    expect(allocConfItems(conf)).toEqual([
      { key: 'roundup_power2_divisions', value: '[256:1,>:4]' },
      { key: 'max_split_size_mb', value: '128' },
    ]);
    expect(parseAllocConf(conf).roundupPower2Divisions).toEqual([1, 1, 1, 1, 1, 1, 1, 1, 1, 4, 4, 4, 4, 4, 4, 4]);
    expect(withAllocConfItem(conf, 'expandable_segments', 'True')).toBe(`${conf},expandable_segments:True`);
    expect(withoutAllocConfKey(conf, 'max_split_size_mb')).toBe('roundup_power2_divisions:[256:1,>:4]');
    // The panel's form keeps the list whole, and gives back the same string.
    const form = specToForm({ alloc_conf: conf });
    expect(form.roundupDivisions).toBe('[256:1,>:4]');
    expect(formToSpec(form).spec?.alloc_conf).toBe('max_split_size_mb:128,roundup_power2_divisions:[256:1,>:4]');
  });

  it('refuses in the spec and the form what the engine refuses, with its message', () => {
    for (const conf of ['max_split_size_mb:1', 'roundup_power2_divisions:[256:3]', 'garbage_collection_threshold:2']) {
      const r = checkSpec({ alloc_conf: conf });
      expect(r.ok).toBe(false);
      if (!r.ok) expect(r.issues.join('\n')).toContain(native(conf));
    }
    const form = formToSpec({ ...defaultForm(), roundupDivisions: '[256:3]' });
    expect(form.spec).toBeNull();
    expect(form.errors.roundupDivisions).toContain('the divisions have to be a power of 2 or 0');
  });
});

import { describe, expect, it } from 'vitest';
import Papa from 'papaparse';
import { csvField, toCsv } from '../../main/export/csv';
import { timelineCsv, TIMELINE_COLUMNS } from '../../main/export/timeline_csv';
import { summaryCsv } from '../../main/export/summary_csv';
import { runJson } from '../../main/export/json';
import { parseSpec } from '../../main/contract/spec';
import { CATEGORIES, type MemorySample, type RunEvent, type RunMeta, type RunSummary } from '../../main/contract/runs';

const MiB = 2 ** 20;
const sample = (t: number, allocated: number, reserved: number): MemorySample => ({
  t,
  allocated,
  reserved,
  active: allocated,
  requested: allocated - 100,
  by: [allocated / 2, allocated / 4, 0, allocated / 4, 0, 0, 0, 0],
});
const phase = (t: number, edge: 'begin' | 'end', name: string, iteration = -1): RunEvent => ({
  type: 'phase',
  t,
  edge,
  name,
  iteration,
  micro_batch: name === 'forward' || name === 'backward' ? 0 : -1,
  module: '',
});

function parse(csv: string) {
  const res = Papa.parse<Record<string, string | number | boolean | null>>(csv, {
    header: true,
    dynamicTyping: true,
    skipEmptyLines: true,
  });
  expect(res.errors).toEqual([]);
  return res;
}

describe('CSV export', () => {
  it('quotes per RFC 4180', () => {
    expect(csvField('plain')).toBe('plain');
    expect(csvField('a,b')).toBe('"a,b"');
    expect(csvField('say "hi"')).toBe('"say ""hi"""');
    expect(csvField('two\nlines')).toBe('"two\nlines"');
    expect(csvField(null)).toBe('');
    expect(csvField(Number.NaN)).toBe('');
    expect(csvField(12345678901)).toBe('12345678901');
    expect(toCsv(['a', 'b'], [[1, 'x']])).toBe('a,b\r\n1,x\r\n');
  });

  it('writes a timeline papaparse reads back, with units in the header and phases filled in', () => {
    const timeline = [
      sample(0, 4 * MiB, 20 * MiB),
      sample(1.5, 8 * MiB, 20 * MiB),
      sample(3.25, 16 * MiB, 40 * MiB),
      sample(5, 6 * MiB, 40 * MiB),
    ];
    const events = [
      phase(0.5, 'begin', 'iteration', 0),
      phase(0.5, 'begin', 'forward', 0),
      phase(2, 'end', 'forward', 0),
      phase(2, 'begin', 'backward', 0),
      phase(4, 'end', 'backward', 0),
      phase(4, 'begin', 'optimizer_step', 0),
    ];
    const csv = timelineCsv({ timeline, events });
    expect(csv.split('\r\n')[0]).toBe(TIMELINE_COLUMNS.join(','));
    expect(TIMELINE_COLUMNS).toContain('time_ms');
    expect(TIMELINE_COLUMNS).toContain('allocated_bytes');
    expect(TIMELINE_COLUMNS).toContain('optimizer_state_bytes');
    expect(TIMELINE_COLUMNS).toContain('cached_free_bytes');
    const rows = parse(csv).data;
    expect(rows).toHaveLength(4);
    expect(rows.map((r) => r.phase)).toEqual([null, 'forward', 'backward', 'optimizer_step']);
    expect(rows.map((r) => r.iteration)).toEqual([-1, 0, 0, 0]);
    expect(rows[2]).toMatchObject({
      time_ms: 3.25,
      allocated_bytes: 16 * MiB,
      reserved_bytes: 40 * MiB,
      active_bytes: 16 * MiB,
      requested_bytes: 16 * MiB - 100,
      parameters_bytes: 8 * MiB,
      gradients_bytes: 4 * MiB,
      activations_bytes: 4 * MiB,
      cached_free_bytes: 24 * MiB,
    });
    for (const c of CATEGORIES) expect(rows[0]).toHaveProperty(`${c}_bytes`);
  });

  it('writes one summary row per run with spec columns and every reading', () => {
    const meta = (id: string, name: string, spec: unknown, readings: Record<string, number>, oom = false): RunMeta => ({
      id,
      name,
      created: '2026-11-21T10:00:00.000Z',
      updated: '2026-11-21T10:00:01.000Z',
      status: oom ? 'oom' : 'done',
      device: 'sim:h100-80gb',
      spec: parseSpec(spec),
      group: null,
      pid: 1,
      hostname: 'h',
      summary: {
        status: oom ? 'oom' : 'done',
        readings,
        baseline: 0,
        peak_allocated: 123 * MiB,
        peak_reserved: 140 * MiB,
        peaks: [],
        duration_ms: 12.5,
        sim_time_ms: null,
        parameters: 10,
        trainable_parameters: 4,
        sdpa_backend: null,
        oom: oom ? ({ requested: 64 * MiB } as RunSummary['oom']) : null,
        error: null,
        samples: 4,
        events: 2,
      },
    });
    const csv = summaryCsv([
      meta('20261121-100000-aaaaaa', 'plain', { optimizer: 'sgd' }, { params: 25264640, it0_peak_step: 51577856 }),
      meta(
        '20261121-100001-bbbbbb',
        'tricky, "quoted"\nname',
        { model: { kind: 'residual' }, checkpoint: { every: 4 }, batch: 128 },
        { params: 42024960, peak: 5 },
        true,
      ),
    ]);
    const { data, meta: m } = parse(csv);
    expect(m.fields).toEqual(
      expect.arrayContaining([
        'model_depth',
        'batch',
        'checkpoint',
        'peak_allocated_bytes',
        'params_bytes',
        'it0_peak_step_bytes',
        'peak_bytes',
      ]),
    );
    expect(data).toHaveLength(2);
    expect(data[0]).toMatchObject({
      name: 'plain',
      model: 'mlp',
      model_in: 1024,
      model_dim: null,
      optimizer: 'sgd',
      params_bytes: 25264640,
      peak_bytes: null,
      oom: false,
    });
    expect(data[1]).toMatchObject({
      name: 'tricky, "quoted"\nname',
      model: 'residual',
      model_dim: 512,
      model_depth: 20,
      batch: 128,
      checkpoint: 'every:4',
      params_bytes: 42024960,
      it0_peak_step_bytes: null,
      oom: true,
      oom_requested_bytes: 64 * MiB,
      parameters: 10,
      trainable_parameters: 4,
    });
  });

  it('exports a run as JSON that parses back to the same record', () => {
    const rec = { meta: { id: 'x' } as RunMeta, timeline: [sample(0, 1, 2)], events: [phase(0, 'begin', 'forward', 0)] };
    const back = JSON.parse(runJson(rec));
    expect(back.format).toBe('vramlab.run/1');
    expect(back.timeline).toEqual(rec.timeline);
    expect(back.events).toEqual(rec.events);
  });
});

describe('spec columns of runs stored before the transformer fields', () => {
  it('leaves the missing fields empty instead of failing', async () => {
    const { specColumns } = await import('../../main/export/spec_columns');
    const old = { ...parseSpec({}) } as Record<string, unknown>;
    for (const k of ['weights', 'finetune', 'shapes', 'prompt', 'new_tokens', 'cache']) delete old[k];
    const row = specColumns(old as never);
    expect(row).toMatchObject({ model: 'mlp', model_in: 1024, finetune: 'full', weights: null, shapes: null, cache: null });
  });
});

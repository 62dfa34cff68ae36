// The guided experiments: enough lessons, each complete, answers checked, progress kept.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { cleanup, fireEvent, render, screen } from '@testing-library/svelte';
import LessonsPanel from '../../renderer/src/lessons/LessonsPanel.svelte';
import { lessons } from '../../renderer/src/lessons/lessons';
import { loadProgress } from '../../renderer/src/lessons/progress';
import { checkSpec } from '../../main/contract/spec';
import type { DeviceInfo } from '../../main/contract';

const h100: DeviceInfo = {
  id: 'sim:h100-80gb',
  kind: 'sim',
  name: 'NVIDIA H100 80GB (simulated)',
  total: 85_017_755_648,
  free: 84_213_497_856,
  context: 804_257_792,
  ordinal: 0,
  memBandwidthGBs: 3350,
  fp32Tflops: 67,
  bf16Tflops: 989,
};

beforeEach(() => localStorage.clear());
afterEach(() => cleanup());

describe('lesson content', () => {
  it('has at least twelve complete lessons whose experiments are valid specs', () => {
    const list = lessons(h100);
    expect(list.length).toBeGreaterThanOrEqual(12);
    expect(new Set(list.map((l) => l.id)).size).toBe(list.length);
    for (const l of list) {
      expect(l.goal.length, l.id).toBeGreaterThan(10);
      expect(l.steps.length, l.id).toBeGreaterThan(0);
      expect(l.look.length, l.id).toBeGreaterThan(0);
      expect(l.check.options[l.check.answer], l.id).toBeDefined();
      expect(l.check.explanation.length, l.id).toBeGreaterThan(20);
      for (const s of l.steps)
        if (s.action?.kind === 'experiment') expect(checkSpec(s.action.spec), `${l.id}: ${s.action.label}`).toMatchObject({ ok: true });
    }
  });

  it("fills the memory-hierarchy lesson with the chosen device's figures", () => {
    const l = lessons(h100).find((x) => x.id === 'memory-hierarchy')!;
    expect(l.steps[0].text).toContain('NVIDIA H100 80GB');
    expect(l.steps[0].text).toContain('79.2 GiB');
    expect(l.steps[0].text).toContain('3,350 GB/s');
  });
});

describe('LessonsPanel', () => {
  it('checks the answer, explains it, and remembers progress', async () => {
    const onexperiment = vi.fn();
    render(LessonsPanel, { props: { devices: [h100], onexperiment, onplayground: vi.fn() } });
    await fireEvent.click(screen.getByTestId('lesson-no-grad'));
    const options = screen.getAllByTestId('check-option');
    await fireEvent.click(options[0]);
    expect(screen.getByTestId('check-verdict').textContent).toMatch(/Not quite/);
    await fireEvent.click(options[1]);
    expect(screen.getByTestId('check-verdict').textContent).toMatch(/Right/);
    expect(loadProgress()['no-grad']).toMatchObject({ answered: 1, correct: true });

    // A step's action hands a real spec to the experiment screen, on the chosen device.
    await fireEvent.click(screen.getAllByTestId('lesson-action')[1]);
    expect(onexperiment).toHaveBeenCalledWith(expect.objectContaining({ mode: 'inference', device: 'sim:h100-80gb' }), true);
    expect(loadProgress()['no-grad'].steps).toContain(1);

    cleanup();
    render(LessonsPanel, { props: { devices: [h100], onexperiment, onplayground: vi.fn() } });
    expect(screen.getByTestId('lesson-no-grad').textContent).toContain('✓');
  });

  it('hands playground commands with their allocator settings to the playground', async () => {
    const onplayground = vi.fn();
    render(LessonsPanel, { props: { devices: [h100], onexperiment: vi.fn(), onplayground } });
    await fireEvent.click(screen.getByTestId('lesson-fragmentation'));
    await fireEvent.click(screen.getAllByTestId('lesson-action')[1]);
    expect(onplayground).toHaveBeenCalledWith(expect.arrayContaining(['x = randn(104857600)']), {
      capacity: '1100MiB',
      allocConf: 'max_split_size_mb:128',
    });
  });
});

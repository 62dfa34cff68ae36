// The Snapshots screen on snapshots from real jobs (jsdom, a real host and addon in this
// process): a late-started trace, a ring buffer that dropped its oldest events, and a job
// that ran out of memory under a cap. Each must be said plainly.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { fireEvent, render, screen, waitFor } from '@testing-library/svelte';
import SnapshotsPanel from '../../renderer/src/panels/snapshot/SnapshotsPanel.svelte';
import { snapshotHostTransport } from './snapshot_host';

const FIX = path.resolve(import.meta.dirname, '../fixtures/torch');

const transport = snapshotHostTransport();

async function open(name: string) {
  render(SnapshotsPanel, { props: { transport } });
  await screen.findByTestId('snap-drop');
  const input = screen.getAllByTestId('snap-file')[0] as HTMLInputElement;
  const file = new File([new Uint8Array(readFileSync(path.join(FIX, name)))], name);
  Object.defineProperty(input, 'files', { value: [file], configurable: true });
  await fireEvent.change(input);
  await waitFor(() => expect(screen.getAllByTestId('snap-name').some((n) => n.textContent === name)).toBe(true), { timeout: 15_000 });
}

describe('Snapshots from real jobs', () => {
  it('a late start: the badge, and the state before the trace with its numbers', async () => {
    await open('gpt_late_start.pickle');
    expect(screen.getByTestId('snap-badge-late').textContent).toBe('trace started late');
    // Where the memory was at the peak, on the first tab: ranked, biggest first.
    const rows = [...screen.getByTestId('snap-where-peak').querySelectorAll('tbody tr')];
    expect(rows.length).toBeGreaterThan(2);
    // Memory allocated before recording began has no stack: it is named for what it is.
    expect(rows[0].textContent).toMatch(/allocated before the trace began/);
    expect(rows.some((r) => /t2_protocol\.py:\d+/.test(r.textContent!))).toBe(true);
    await fireEvent.click(screen.getByTestId('snapview-stats'));
    const note = screen.getByTestId('snap-late-start').textContent!;
    expect(note).toMatch(/The trace started late\./);
    expect(note).toMatch(/740\.00 MiB were already reserved in 51 segments/);
    expect(note).toMatch(/334\.97 MiB allocated in 231 blocks/);
    expect(screen.queryByTestId('snap-start-problems')).toBeNull();
  });

  it('a full ring buffer: said to be cut short', async () => {
    await open('gpt_ring_truncated.pickle');
    expect(screen.getByTestId('snap-badge-late').textContent).toMatch(/ring buffer/);
    await fireEvent.click(screen.getByTestId('snapview-stats'));
    expect(screen.getByTestId('snap-late-start').textContent).toMatch(/exactly 3000 events, the size of a full ring buffer/);
  });

  it('a recorded OOM: what it says and the cap that reproduces it (on the first tab), and whether settings would have avoided it', async () => {
    await open('residual_oom_capped.pickle');
    expect(screen.getByTestId('snap-badge-oom').textContent).toBe('recorded OOM at event 1892');
    // On the first tab.
    const oom = screen.getByTestId('snap-recorded-oom').textContent!;
    expect(oom).toMatch(/64\.00 MiB/);
    expect(oom).toMatch(/a memory cap \(set_per_process_memory_fraction\), not the card, refused it/);
    expect(screen.getByTestId('snap-oom-cap').textContent).toMatch(/cap of 2\.00 GiB/);
    expect(screen.getByTestId('snap-where-oom').querySelectorAll('tbody tr').length).toBeGreaterThan(0);

    await fireEvent.click(screen.getByTestId('snapview-whatif'));
    expect((screen.getByTestId('snap-capacity') as HTMLInputElement).value).toBe('2GiB');
    await fireEvent.input(screen.getByTestId('snap-conf-input'), { target: { value: '' } });
    await fireEvent.click(screen.getByTestId('snap-run-whatif'));
    await waitFor(() => expect(screen.getByTestId('snap-own-outcome').textContent).toMatch(/^OOM at event 1892.*the recorded OOM again/), {
      timeout: 15_000,
    });
    await fireEvent.input(screen.getByTestId('snap-capacity'), { target: { value: '3GiB' } });
    await fireEvent.click(screen.getByTestId('snap-run-whatif'));
    await waitFor(() => expect(screen.getByTestId('snap-own-outcome').textContent).toMatch(/^fits.*recorded OOM avoided/), {
      timeout: 15_000,
    });
  });
});

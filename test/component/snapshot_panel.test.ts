// The Snapshots screen in jsdom, wired to a real host in this process (the real addon
// and snapshot reader; the transport is a direct call, as Electron IPC would be).
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { fireEvent, render, screen, waitFor } from '@testing-library/svelte';
import SnapshotsPanel from '../../renderer/src/panels/snapshot/SnapshotsPanel.svelte';
import { snapshotHostTransport } from './snapshot_host';

const FIX = path.resolve(import.meta.dirname, '../fixtures');
const stats = JSON.parse(readFileSync(path.join(FIX, 'torch', 'mlp_adam.stats.json'), 'utf8'));

const transport = snapshotHostTransport();

async function openFile(name: string, data: Uint8Array) {
  const input = screen.getAllByTestId('snap-file')[0] as HTMLInputElement;
  const file = new File([new Uint8Array(data)], name);
  Object.defineProperty(input, 'files', { value: [file], configurable: true });
  await fireEvent.change(input);
}

describe('Snapshots screen', () => {
  it('opens a snapshot, shows its statistics, and replays a what-if', async () => {
    render(SnapshotsPanel, { props: { transport } });
    await screen.findByTestId('snap-drop');
    await openFile('mlp_adam.pickle', readFileSync(path.join(FIX, 'torch', 'mlp_adam.pickle')));
    expect((await screen.findByTestId('snap-name', {}, { timeout: 10_000 })).textContent).toBe('mlp_adam.pickle');
    await waitFor(() => expect(screen.getByTestId('snap-timeline').getAttribute('data-bands')).not.toBe('0'));

    await fireEvent.click(screen.getByTestId('snapview-stats'));
    const peak = screen.getByTestId('snap-peak-reserved');
    expect(Number(peak.getAttribute('title')!.replace(/[^0-9]/g, ''))).toBe(stats.peak_reserved);
    expect(peak.textContent).toMatch(/^416\.00 MiB/);
    expect(screen.getByTestId('snap-conf').textContent).toBe('(PYTORCH_CUDA_ALLOC_CONF not set)');

    await fireEvent.click(screen.getByTestId('snapview-whatif'));
    // Presets toggle their key in the settings string.
    const conf = screen.getByTestId('snap-conf-input') as HTMLInputElement;
    expect(conf.value).toBe('expandable_segments:True');
    await fireEvent.click(screen.getByTestId('snap-preset-max_split_size_mb'));
    expect(conf.value).toBe('expandable_segments:True,max_split_size_mb:256');
    await fireEvent.click(screen.getByTestId('snap-preset-expandable_segments'));
    expect(conf.value).toBe('max_split_size_mb:256');
    await fireEvent.input(conf, { target: { value: '' } });
    await fireEvent.click(screen.getByTestId('snap-run-whatif'));
    // The default settings on the whole device: PyTorch's own run, exactly.
    const peakCell = await screen.findByTestId('snap-whatif-peak-reserved', {}, { timeout: 10_000 });
    expect(Number(peakCell.getAttribute('title')!.replace(/[^0-9]/g, ''))).toBe(stats.peak_reserved);
    expect(screen.getByTestId('snap-whatif-device-allocations').textContent).toBe(String(stats.num_device_alloc));
    expect(screen.getByTestId('snap-whatif-device-frees').textContent).toBe(String(stats.num_device_free));
    expect(screen.getByTestId('snap-verdict').textContent).toMatch(/^Both fit in whole device/);

    // Too small a card for anything: both run out, said plainly.
    await fireEvent.input(screen.getByTestId('snap-capacity'), { target: { value: '300MiB' } });
    await fireEvent.click(screen.getByTestId('snap-run-whatif'));
    await waitFor(() => expect(screen.getByTestId('snap-verdict').textContent).toMatch(/^Neither fits in 300\.00 MiB/));
    expect(screen.getAllByTestId('snap-oom')).toHaveLength(2);

    // Bad input: the reason in place, no stale answer beside it.
    await fireEvent.input(screen.getByTestId('snap-capacity'), { target: { value: '24 bananas' } });
    await fireEvent.click(screen.getByTestId('snap-run-whatif'));
    expect((await screen.findByTestId('snap-whatif-error')).textContent).toMatch(/bad size "24 bananas"/);
    expect(screen.queryByTestId('snap-compare')).toBeNull();
  });

  it('comes back to the open snapshot, and shows why a bad file cannot be read', async () => {
    render(SnapshotsPanel, { props: { transport } });
    expect((await screen.findByTestId('snap-name')).textContent).toBe('mlp_adam.pickle');
    await openFile('notes.txt', new TextEncoder().encode('hello, not a pickle'));
    const err = await screen.findByTestId('snap-open-error');
    expect(err.getAttribute('role')).toBe('alert');
    expect(err.textContent).toMatch(/^notes\.txt is not a PyTorch memory snapshot vramlab can read: pickle: /);
  });

  it('scrubs the allocator state to any event', async () => {
    render(SnapshotsPanel, { props: { transport } });
    await screen.findByTestId('snap-name');
    await fireEvent.click(screen.getByTestId('snapview-state'));
    // Opens at peak reserved: 416 MiB in 23 segments... of which some were freed later.
    await waitFor(() =>
      expect(
        Number(
          screen
            .getByTestId('snap-state-reserved')
            .parentElement!.getAttribute('title')!
            .replace(/[^0-9]/g, ''),
        ),
      ).toBe(stats.peak_reserved),
    );
    await fireEvent.input(screen.getByTestId('snap-event'), { target: { value: '-1' } });
    await waitFor(() => expect(screen.getByTestId('snap-state-event').textContent).toMatch(/before the first event/));
    expect(screen.queryAllByTestId('snap-seg')).toHaveLength(0);
    await fireEvent.input(screen.getByTestId('snap-event'), { target: { value: '524' } });
    await waitFor(() => expect(screen.getByTestId('snap-state-event').textContent).toMatch(/event 524/));
    expect(screen.getAllByTestId('snap-seg').length).toBe(23 - 9);
    await fireEvent.click(screen.getAllByTestId('snap-seg')[0]);
    expect(screen.getByTestId('snap-blocks').querySelectorAll('tbody tr').length).toBeGreaterThan(0);
  });
});

// The experiment form validates as the user types and shows the reason next to the field.
import { describe, expect, it, vi } from 'vitest';
import { cleanup, fireEvent, render, screen } from '@testing-library/svelte';
import { afterEach } from 'vitest';
afterEach(() => cleanup());
import ExperimentPanel from '../../renderer/src/panels/ExperimentPanel.svelte';
import { defaultForm, formToSpec, specToForm } from '../../renderer/src/lib/specForm';
import type { DeviceInfo } from '../../main/contract';
import { reactive } from './reactive.svelte';

const devices: DeviceInfo[] = [
  { id: 'sim:h100-80gb', kind: 'sim', name: 'H100 80GB (sim)', total: 85_017_755_648, free: 85_017_755_648, ordinal: 0, memBandwidthGBs: 3350, fp32Tflops: 67, bf16Tflops: 989 },
];

function setup(overrides = {}) {
  const onrun = vi.fn();
  const form = reactive({ ...defaultForm(), ...overrides });
  render(ExperimentPanel, { props: { form, devices, onrun } });
  return { onrun };
}

async function type(testid: string, value: string) {
  await fireEvent.input(screen.getByTestId(testid), { target: { value } });
}

describe('ExperimentPanel validation', () => {
  it('shows the predicted peak for the defaults and runs the spec', async () => {
    const { onrun } = setup();
    expect(screen.getByTestId('predicted-peak').textContent).toMatch(/MiB/);
    await fireEvent.click(screen.getByTestId('run'));
    expect(onrun).toHaveBeenCalledTimes(1);
    expect(onrun.mock.calls[0][0]).toMatchObject({ batch: 256, optimizer: 'adam', model: { kind: 'mlp', depth: 2 } });
  });

  it('rejects a non-number batch with the reason and disables Run', async () => {
    setup();
    await type('field-batch', '12x');
    expect(screen.getByTestId('error-batch').textContent).toBe('"12x" is not a whole number');
    expect(screen.getByTestId('field-batch').getAttribute('aria-invalid')).toBe('true');
    expect((screen.getByTestId('run') as HTMLButtonElement).disabled).toBe(true);
  });

  it("takes ranges from the contract: batch 0 is refused with the spec's reason", async () => {
    setup();
    await type('field-batch', '0');
    expect(screen.getByTestId('error-batch').textContent).toMatch(/must be an integer from 1 to 16777216/);
  });

  it('updates the predicted peak live as the batch grows', async () => {
    setup();
    const before = screen.getByTestId('predicted-peak').getAttribute('title');
    await type('field-batch', '4096');
    const after = screen.getByTestId('predicted-peak').getAttribute('title');
    const n = (s: string | null) => Number(s!.replace(/[^0-9]/g, ''));
    expect(n(after)).toBeGreaterThan(n(before));
  });

  it('refuses checkpoint every k larger than the depth', async () => {
    setup({ modelKind: 'residual', depth: '4', checkpoint: 'every', every: '8' });
    expect(screen.getByTestId('error-every').textContent).toMatch(/at most model.depth \(4\)/);
  });

  it('checks allocator settings as PyTorch does', async () => {
    setup();
    await type('field-maxSplitMb', '8');
    expect(screen.getByTestId('error-maxSplitMb').textContent).toMatch(/>= 20/);
    await type('field-gcThreshold', '1.5');
    expect(screen.getByTestId('error-gcThreshold').textContent).toMatch(/between 0 and 1/);
    await type('field-roundupDivisions', '3');
    expect(screen.getByTestId('error-roundupDivisions').textContent).toMatch(/power of 2/);
    await type('field-roundupDivisions', '4');
    expect(screen.queryByTestId('error-roundupDivisions')).toBeNull();
  });

  it('parses the capacity cap and warns when the prediction will not fit', async () => {
    setup();
    await type('field-capacity', '2 parsecs');
    expect(screen.getByTestId('error-capacity').textContent).toMatch(/is not a size/);
    await type('field-capacity', '64MiB');
    expect(screen.queryByTestId('error-capacity')).toBeNull();
    expect(screen.getByTestId('predicted-oom').textContent).toMatch(/expect an OOM/);
  });

  it('builds the alloc_conf string the allocator reads', () => {
    const r = formToSpec({ ...defaultForm(), maxSplitMb: '128', expandable: true, gcThreshold: '0.6' });
    expect(r.spec?.alloc_conf).toBe('max_split_size_mb:128,expandable_segments:True,garbage_collection_threshold:0.6');
  });

  it('offers the loss and puts the choice in the spec (and back from a spec)', async () => {
    const { onrun } = setup();
    const select = screen.getByTestId('field-loss') as HTMLSelectElement;
    expect([...select.options].map((o) => o.value)).toEqual(['sum', 'mse', 'cross_entropy']);
    await fireEvent.change(select, { target: { value: 'cross_entropy' } });
    await fireEvent.click(screen.getByTestId('run'));
    expect(onrun.mock.calls[0][0]).toMatchObject({ loss: 'cross_entropy' });
    expect(specToForm({ loss: 'mse' }).loss).toBe('mse');
  });

  it('labels every input', () => {
    setup();
    for (const el of document.querySelectorAll('input, select')) expect(el.closest('label'), el.getAttribute('name') ?? '').not.toBeNull();
  });
});

// The experiment form validates as the user types and shows the reason next to the field;
// its prediction is the spec simulated by a real host (run.predict), live as the user types.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { cleanup, fireEvent, render, screen, waitFor } from '@testing-library/svelte';
import { afterEach } from 'vitest';
afterEach(() => cleanup());
import ExperimentPanel from '../../renderer/src/panels/ExperimentPanel.svelte';
import { defaultForm, formToSpec, specToForm } from '../../renderer/src/lib/specForm';
import { api } from '../../renderer/src/lib/api';
import type { DeviceInfo } from '../../main/contract';
import { reactive } from './reactive.svelte';
import { hostTransport, type HostTransport } from '../helpers/host_transport';

let env: HostTransport;
beforeAll(() => {
  env = hostTransport('vramlab-panel-');
});
afterAll(() => env.close());

const devices: DeviceInfo[] = [
  {
    id: 'sim:h100-80gb',
    kind: 'sim',
    name: 'H100 80GB (sim)',
    total: 85_017_755_648,
    free: 84_213_497_856,
    context: 804_257_792,
    ordinal: 0,
    memBandwidthGBs: 3350,
    fp32Tflops: 67,
    bf16Tflops: 989,
  },
];

function setup(overrides = {}) {
  const onrun = vi.fn();
  const form = reactive({ ...defaultForm(), ...overrides });
  const predict = vi.fn((spec) => api.predict(env.transport, spec, 'panel'));
  render(ExperimentPanel, { props: { form, devices, onrun, predict } });
  return { onrun, predict, form };
}

async function type(testid: string, value: string) {
  await fireEvent.input(screen.getByTestId(testid), { target: { value } });
}

describe('ExperimentPanel validation', () => {
  it('shows the predicted peak for the defaults and runs the spec', async () => {
    const { onrun } = setup();
    await waitFor(() => expect(screen.getByTestId('predicted-peak').textContent).toMatch(/MiB/));
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

  it('updates the predicted peak live as the batch grows, asking once per pause in typing', async () => {
    const { predict } = setup();
    const n = (s: string | null) => Number(s!.replace(/[^0-9]/g, ''));
    await waitFor(() => expect(screen.getByTestId('predicted-peak')).toBeTruthy());
    const before = n(screen.getByTestId('predicted-peak').getAttribute('title'));
    const calls = predict.mock.calls.length;
    for (const v of ['4', '40', '409', '4096']) await type('field-batch', v); // typed quickly: one request
    await waitFor(() => expect(n(screen.getByTestId('predicted-peak').getAttribute('title'))).toBeGreaterThan(before));
    expect(predict.mock.calls.length).toBe(calls + 1);
    expect(predict.mock.calls.at(-1)![0]).toMatchObject({ batch: 4096 });
  });

  it('predicts exactly the peak the run then measures (default spec)', async () => {
    const { onrun } = setup();
    await waitFor(() => expect(screen.getByTestId('predicted-peak')).toBeTruthy());
    const predicted = Number(
      screen
        .getByTestId('predicted-peak')
        .getAttribute('title')!
        .replace(/[^0-9]/g, ''),
    );
    await fireEvent.click(screen.getByTestId('run'));
    const { runId } = await api.startRun(env.transport, onrun.mock.calls[0][0]);
    let meta = (await api.getRun(env.transport, runId)).meta;
    while (meta.status === 'running') {
      await new Promise((r) => setTimeout(r, 20));
      meta = (await api.getRun(env.transport, runId)).meta;
    }
    expect(meta.status).toBe('done');
    expect(predicted).toBe(meta.summary!.peak_allocated - meta.summary!.baseline);
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
    await waitFor(() => expect(screen.getByTestId('predicted-oom').textContent).toMatch(/expect an OOM/));
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

// The bench page: the real MemoryChart component fed synthetic samples the way a run's
// progress events feed it (batches of samples, phases, categories). The driver reads
// window.bench.
import { mount } from 'svelte';
import '../../renderer/src/app.css';
import Harness from './Harness.svelte';

const params = new URLSearchParams(location.search);
mount(Harness, {
  target: document.getElementById('app')!,
  props: {
    prefill: Number(params.get('prefill') ?? 100_000),
    rate: Number(params.get('rate') ?? 1000),
    batchMs: Number(params.get('batchMs') ?? 50),
    view: (params.get('view') ?? 'lines') as 'lines' | 'stacked',
  },
});

// Closing the window (host dispose) mid-run stops the run and keeps its record.
import { describe, expect, it } from 'vitest';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createHost } from '../../main/host/create';
import { RunStore } from '../../main/store/store';
import { native } from '../helpers/addon';

describe('host dispose', () => {
  it('cancels a running experiment and leaves a finished record', async () => {
    const home = mkdtempSync(path.join(tmpdir(), 'vramlab-dispose-'));
    const host = createHost(native, { home });
    const spec = { model: { kind: 'residual', dim: 1024, depth: 400 }, batch: 512, iterations: 50, optimizer: 'adam', history: true };
    const res = await host.handle({ id: 1, method: 'run.start', params: { spec } }, 'ipc');
    expect(res.ok).toBe(true);
    const runId = (res as { result: { runId: string } }).result.runId;
    await new Promise((r) => setTimeout(r, 50));
    host.dispose();
    const store = await RunStore.open(home);
    let status = '';
    for (let i = 0; i < 100 && !['cancelled', 'done'].includes(status); i++) {
      await new Promise((r) => setTimeout(r, 100));
      status = (await store.list()).find((m) => m.id === runId)?.status ?? '';
    }
    expect(status).toBe('cancelled');
  });
});

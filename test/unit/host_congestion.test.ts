// Backpressure from a transport to the runner: the host's congestion probes are what the
// run's progress batcher consults before sending (the batcher's own behaviour under
// congestion is tested in runner.test.ts).
import { describe, expect, it } from 'vitest';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createHost } from '../../main/host/create';
import { native } from '../helpers/addon';

describe('host congestion', () => {
  it('runs consult the transports before sending progress', async () => {
    const host = createHost(native, { home: mkdtempSync(path.join(tmpdir(), 'vramlab-cong-')) });
    let asked = 0;
    const remove = host.addCongestionProbe(() => (asked++, false));
    const finished = new Promise((resolve) =>
      host.events.on('event', (m: { event: string }) => (m.event === 'run.done' || m.event === 'run.error') && resolve(m)),
    );
    const res = await host.handle(
      {
        id: 1,
        method: 'run.start',
        params: {
          spec: {
            model: { kind: 'residual', dim: 1024, depth: 200 },
            batch: 512,
            optimizer: 'adam',
            history: true,
            device: 'sim:h100-80gb',
          },
        },
      },
      'websocket',
    );
    expect(res.ok).toBe(true);
    expect(((await finished) as { event: string }).event).toBe('run.done');
    expect(asked).toBeGreaterThan(0);
    remove();
    expect(host.isCongested()).toBe(false);
    host.addCongestionProbe(() => true);
    expect(host.isCongested()).toBe(true);
    host.dispose();
  });
});

// A live run's final series is the whole run even when a progress batch was lost on the way
// (serve drops frames for a client whose socket buffer is full): the numbered batches show
// the gap and the stored run replaces the live series. Real host, real run; only the
// delivery of one event is withheld, as the server does when it drops a frame.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventMessage } from '../../main/contract';
import type { RunProgress, RunRecord } from '../../main/contract/runs';
import type { SpecInput } from '../../main/contract/spec';
import { LiveRun } from '../../renderer/src/lib/live.svelte';
import type { Transport } from '../../renderer/src/transport/transport';
import { hostTransport, type HostTransport } from '../helpers/host_transport';

const SPEC: SpecInput = { model: { kind: 'gpt', vocab: 1000, seq: 64, dim: 64, depth: 2, heads: 4 }, batch: 2, iterations: 3 } as SpecInput;

/** The host's transport, minus the progress batches `drop` picks. */
function lossy(h: HostTransport, drop: (p: RunProgress) => boolean): Transport {
  return {
    ...h.transport,
    onEvent: (l) =>
      h.transport.onEvent((m: EventMessage) => {
        if (m.event === 'run.progress' && drop(m.data as RunProgress)) return;
        l(m);
      }),
  };
}

async function settled(run: LiveRun): Promise<void> {
  for (let i = 0; i < 2000 && (run.status === 'running' || run.status === 'starting' || !run.meta); i++)
    await new Promise((r) => setTimeout(r, 10));
}

describe('LiveRun', () => {
  let h: HostTransport;
  beforeAll(() => {
    h = hostTransport('vramlab-live-run-');
  });
  afterAll(() => h?.close());

  const stored = async (id: string) =>
    ((await h.host.handle({ id: 1, method: 'runs.get', params: { id } }, 'websocket')) as { result: RunRecord }).result;

  it('keeps its own series when every batch arrived', async () => {
    const run = new LiveRun(SPEC);
    await run.start(h.transport, null);
    await settled(run);
    expect({ status: run.status, error: run.error }).toEqual({ status: 'done', error: null });
    expect(run.reloaded).toBe(false);
    const rec = await stored(run.runId!);
    expect(run.series.lastX()).toBe(rec.timeline[rec.timeline.length - 1].t);
    expect(run.series.peak!.y).toBe(rec.meta.summary!.peak_allocated);
  });

  for (const which of ['first', 'last'] as const)
    it(`shows the stored run when the ${which} batch was lost`, async () => {
      let last: RunProgress | null = null;
      // Dropping the last needs knowing it is the last: hold each back until the next (or done) comes.
      const run = new LiveRun(SPEC);
      const t =
        which === 'first'
          ? lossy(h, (p) => p.seq === 0)
          : {
              ...h.transport,
              onEvent: (l: (m: EventMessage) => void) =>
                h.transport.onEvent((m: EventMessage) => {
                  if (m.event === 'run.progress') {
                    if (last) l({ event: 'run.progress', data: last });
                    last = m.data as RunProgress;
                    return;
                  }
                  l(m); // run.done: the held-back last batch never arrives
                }),
            };
      await run.start(t, null);
      await settled(run);
      expect({ status: run.status, error: run.error }).toEqual({ status: 'done', error: null });
      expect(run.reloaded).toBe(true);
      const rec = await stored(run.runId!);
      expect(run.series.lastX()).toBe(rec.timeline[rec.timeline.length - 1].t);
      expect(run.series.peak!.y).toBe(rec.meta.summary!.peak_allocated);
      expect(run.series.length).toBe(rec.timeline.length);
    });
});

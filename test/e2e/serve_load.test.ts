// The light version of bench/serve/load.mjs: serve in its own process with
// 10 clients, 2 slow readers, a greedy client, oversized frames, heavy predictions from 4
// connections and 2 clients abandoning sweeps, for a few seconds; it must stay up with
// bounded memory (its peak RSS, measured from outside), and the abandoned sweeps must stop.
// The full run: `node bench/serve/load.mjs`.
import { describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import path from 'node:path';

describe('serve under load (light)', () => {
  it('stays up with bounded RSS', () => {
    const root = path.resolve(__dirname, '../..');
    const r = spawnSync(
      process.execPath,
      [
        'bench/serve/load.mjs',
        '--clients',
        '10',
        '--slow',
        '2',
        '--seconds',
        '3',
        '--huge-samples',
        '200000',
        '--heavy',
        '4',
        '--sweeps',
        '2',
        '--json',
      ],
      {
        cwd: root,
        encoding: 'utf8',
        timeout: 110_000,
      },
    );
    expect(r.status, r.stderr).toBe(0);
    const report = JSON.parse(r.stdout.trim().split('\n').pop()!);
    expect(report.serveUpAfter).toBe(true);
    expect(report.replies.error).toBe(0);
    // Every well-behaved client is served despite the slow and greedy ones (throughput is the
    // full benchmark's figure: on a loaded 2-core machine it varies several-fold).
    expect(report.normalClientOk).toHaveLength(10);
    for (const n of report.normalClientOk) expect(n).toBeGreaterThan(0);
    expect(report.peakRssMB).toBeLessThan(1024);
    expect(report.hugeRun.ok).toBe(true);
    // Heavy predictions were answered, cancelled with their connection, or refused as busy.
    const h = report.heavyPredictions;
    expect(h.sent).toBeGreaterThan(0);
    expect(h.error).toBe(0);
    expect(h.done + h.cancelled + h.busy + h.closed).toBe(h.sent);
    // The sweeps whose clients left stopped: no run was added once their connections closed.
    expect(report.abandonedSweeps.abandoned).toBeGreaterThan(0);
    expect(report.abandonedSweeps.stopped).toBe(true);
  });
});

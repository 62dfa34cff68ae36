// Child process for store.test.ts: writes runs into the store as fast as it can and
// reports each one that finished ("done <id> <samples> <events>") until it is killed.
import { RunStore } from '../../main/store/store';
import { parseSpec } from '../../main/contract/spec';
import type { MemorySample, RunEvent, RunSummary } from '../../main/contract/runs';

async function main() {
  const home = process.argv[2];
  const store = await RunStore.open(home);
  const spec = parseSpec({ batch: 64 });
  for (let r = 0; ; r++) {
    const w = await store.create(spec, { name: `child run ${r}` });
    process.stdout.write(`started ${w.id}\n`);
    let samples = 0;
    let events = 0;
    for (let c = 0; c < 20; c++) {
      const batch: MemorySample[] = [];
      const evs: RunEvent[] = [];
      for (let i = 0; i < 400; i++) {
        const t = samples + i;
        batch.push({ t, allocated: t * 512, reserved: t * 1024, active: t * 512, requested: t * 500, by: [t, 0, 0, t, 0, 0, 0, 0] });
      }
      evs.push({ type: 'phase', t: samples, edge: 'begin', name: 'forward', iteration: c, micro_batch: 0, module: '' });
      samples += batch.length;
      events += evs.length;
      w.append(batch, evs);
      await w.flush();
    }
    const summary = { status: 'done', readings: { params: r }, samples, events } as unknown as RunSummary;
    await w.finish('done', summary);
    if (r % 3 === 0) await store.rename(w.id, `renamed ${r}`);
    process.stdout.write(`done ${w.id} ${samples} ${events}\n`);
  }
}

main().catch((err) => {
  process.stderr.write(String(err?.stack ?? err) + '\n');
  process.exit(1);
});

// One measurement in a fresh process (so peak RSS is this file's alone): open a snapshot
// (streamed), prepare its replay, replay it under its own settings. Prints one JSON line.
import { busiestDevice, loadSnapshotFile, loadSnapshotFileDecoded } from '../../main/snapshot/import';
import { replayer } from '../../main/snapshot/replay';
import { traceStats } from '../../main/snapshot/stats';
import { windowStart } from '../../main/snapshot/window_start';

const file = process.argv[2];
const ms = (t: number) => Math.round(performance.now() - t);
// CPU time beside wall time: on a shared machine the wall clock also counts other processes.
const cpuMs = (c: NodeJS.CpuUsage) => {
  const d = process.cpuUsage(c);
  return Math.round((d.user + d.system) / 1000);
};
if (process.argv[3] === '--decoded') {
  // For comparison: the whole pickle decoded into dicts first, then converted.
  const t0 = performance.now();
  // The comparison needs every dict decoded at once: beyond the reader's heap budget.
  const s = loadSnapshotFileDecoded(file, { limits: { maxHeapBytes: Infinity } });
  console.log(JSON.stringify({ events: s.deviceTraces[0].length, openMs: ms(t0), peakRss: process.resourceUsage().maxRSS * 1024 }));
  process.exit(0);
}
let t = performance.now();
let c = process.cpuUsage();
let lastPct = -1;
const snap = loadSnapshotFile(file, {
  onProgress: (p) => {
    const pct = Math.floor((100 * p.bytes) / p.total);
    if (process.env.BENCH_PROGRESS && pct >= lastPct + 10) {
      lastPct = pct;
      process.stderr.write(`\r  reading ${file.split('/').pop()}: ${pct}% (${p.events} events)${pct >= 90 ? '\n' : ''}`);
    }
  },
});
const openMs = ms(t);
const openCpuMs = cpuMs(c);
const rssAfterOpen = process.memoryUsage().rss;
const device = busiestDevice(snap);
const events = snap.deviceTraces[device].length;
t = performance.now();
c = process.cpuUsage();
const r = replayer(snap, device);
const prepareMs = ms(t);
t = performance.now();
const o = r.run();
const runMs = ms(t);
const replayCpuMs = cpuMs(c);
t = performance.now();
const st = traceStats(snap, device, { maxPoints: 800 });
const statsMs = ms(t);
// The state at the trace's start alone (a backward walk of the whole trace).
t = performance.now();
windowStart(snap, device);
const startMs = ms(t);
console.log(
  JSON.stringify({
    events,
    openMs,
    openCpuMs,
    prepareMs,
    runMs,
    replayMs: prepareMs + runMs,
    replayCpuMs,
    statsMs,
    startMs,
    rssAfterOpen,
    peakRss: process.resourceUsage().maxRSS * 1024,
    peakReserved: o.peakReserved,
    recordedPeakReserved: st.peakReserved.bytes,
  }),
);

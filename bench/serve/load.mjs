// Load test for `vramlab serve` on loopback: serve runs in its own process (its
// RSS is what we measure) on a store holding the largest run a spec may make and a huge
// run written before timelines were decimated. Then, at once:
//   - N clients looping over light and heavy requests (runs.list, runs.get, devices.list),
//   - slow readers that ask for the huge run and never read,
//   - greedy clients that fire more requests than the in-flight limit,
//   - oversized frames (over the 1 MiB message cap),
//   - heavy predictions (deep checkpointed models) from several connections at once, left
//     in flight when their connection closes,
//   - sweeps abandoned by their client (the connection closes while the sweep runs).
// Reports requests/s, replies by kind, serve's peak RSS (a separate process), whether the
// abandoned sweeps stopped, and whether serve is still up.
//   node bench/serve/load.mjs [--clients 50] [--seconds 20] [--huge-samples 1000000]
//                             [--heavy 8] [--sweeps 4] [--json]
// Needs `npm run build` (dist/cli.cjs, the addon, the renderer).
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import WebSocket from 'ws';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const { values: opt } = parseArgs({
  options: {
    clients: { type: 'string', default: '50' },
    slow: { type: 'string', default: '5' },
    seconds: { type: 'string', default: '20' },
    'huge-samples': { type: 'string', default: '1000000' },
    heavy: { type: 'string', default: '8' },
    sweeps: { type: 'string', default: '4' },
    json: { type: 'boolean', default: false },
  },
});
const CLIENTS = Number(opt.clients);
const SLOW = Number(opt.slow);
const SECONDS = Number(opt.seconds);
const HUGE = Number(opt['huge-samples']);
const HEAVY = Number(opt.heavy);
const SWEEPS = Number(opt.sweeps);

const home = mkdtempSync(path.join(os.tmpdir(), 'vramlab-load-'));
const cli = (args) =>
  spawnSync(process.execPath, [path.join(root, 'bin/vramlab.js'), ...args], {
    env: { ...process.env, VRAMLAB_HOME: home },
    encoding: 'utf8',
    maxBuffer: 256 << 20,
  });

// The largest run a spec may make (limits.ts: 10,000 iterations x depth 6).
const specFile = path.join(home, 'largest.json');
writeFileSync(specFile, JSON.stringify({ iterations: 10000, model: { kind: 'mlp', in: 64, hidden: 64, out: 8, depth: 6 }, batch: 8 }));
const made = cli(['run', specFile, '--json']);
if (made.status !== 0) throw new Error(`could not make the largest run: ${made.stderr}`);
const largest = JSON.parse(made.stdout).id;

// A huge run in the store's on-disk format, as an older version would have left it.
const hugeId = '20200101-000000-abcdef';
const runDir = path.join(home, 'runs', hugeId);
mkdirSync(path.join(runDir, 'chunks'), { recursive: true });
const meta = JSON.parse(readFileSync(path.join(home, 'runs', largest, 'meta.json'), 'utf8'));
writeFileSync(
  path.join(runDir, 'meta.json'),
  JSON.stringify({ ...meta, id: hugeId, name: 'huge (pre-decimation)', created: '2020-01-01T00:00:00.000Z' }),
);
let hugeBytes = 0;
for (let c = 0, t = 0; t < HUGE; c++) {
  const samples = [];
  for (let i = 0; i < 2048 && t < HUGE; i++, t++)
    samples.push({ t, allocated: (t * 7919) % 1000003, reserved: 2e6 + (t % 977), active: t, requested: t, by: [t, 0, 0, t, 0, 0, 0, 0] });
  const text = JSON.stringify({ samples, events: [] });
  hugeBytes += text.length;
  writeFileSync(path.join(runDir, 'chunks', `${String(c + 1).padStart(6, '0')}.json`), text);
}

// serve in its own process.
const serve = spawn(process.execPath, [path.join(root, 'bin/vramlab.js'), 'serve'], {
  env: { ...process.env, VRAMLAB_HOME: home },
  stdio: ['ignore', 'pipe', 'pipe'],
});
const url = await new Promise((resolve, reject) => {
  let out = '';
  serve.stdout.on('data', (d) => {
    out += d;
    const m = /(http:\/\/\S+\?token=\S+)/.exec(out);
    if (m) resolve(m[1]);
  });
  serve.once('exit', (code) => reject(new Error(`serve exited ${code}`)));
});
const wsUrl = url.replace('http://', 'ws://').replace('/?token=', '/ws?token=');
const rss = () => {
  try {
    const st = readFileSync(`/proc/${serve.pid}/status`, 'utf8');
    return Number(/VmRSS:\s+(\d+)/.exec(st)[1]) * 1024;
  } catch {
    return 0;
  }
};
let peakRss = rss();
const rssTimer = setInterval(() => (peakRss = Math.max(peakRss, rss())), 50);

const counts = { ok: 0, busy: 0, error: 0, refused: 0, closed: 0 };
/** Replies each well-behaved client got: none may starve behind the slow and greedy ones. */
const normalOk = [];
let requests = 0;
let deadline = Infinity; // set when the load starts (after the huge-run probe)

function connect() {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(wsUrl, { maxPayload: 512 << 20 });
    ws.once('open', () => resolve(ws));
    ws.once('unexpected-response', () => reject(new Error('refused')));
    ws.once('error', reject);
  });
}

function caller(ws) {
  const waiting = new Map();
  const parts = new Map();
  let next = 1;
  ws.on('message', (d, isBinary) => {
    if (isBinary) return; // packed run progress: this client reads replies only
    let m = JSON.parse(d.toString());
    if (m.type === 'part') {
      const got = (parts.get(m.id) ?? []).concat(m.data);
      if (!m.last) return void parts.set(m.id, got);
      parts.delete(m.id);
      m = JSON.parse(got.join(''));
    }
    if (m.type === 'response') {
      waiting.get(m.id)?.(m);
      waiting.delete(m.id);
    }
  });
  ws.on('close', () => {
    for (const r of waiting.values()) r({ ok: false, error: { code: 'closed', message: 'closed' } });
    waiting.clear();
  });
  return (method, params) =>
    new Promise((resolve) => {
      const id = next++;
      waiting.set(id, resolve);
      requests++;
      ws.send(JSON.stringify({ id, method, params }));
    });
}

function tally(r) {
  if (r.ok) counts.ok++;
  else if (/busy/.test(r.error.message)) counts.busy++;
  else if (r.error.code === 'closed') counts.closed++;
  else counts.error++;
}

async function normalClient(i) {
  const ws = await connect();
  const call = caller(ws);
  // Mostly light calls, and every 16th a whole run (the largest a spec may make, ~8 MB).
  const mix = [
    ...Array(5).fill(['devices.list']),
    ...Array(5).fill(['runs.list']),
    ...Array(5).fill(['app.info']),
    ['runs.get', { id: largest }],
  ];
  normalOk[i] = 0;
  for (let k = i; Date.now() < deadline && ws.readyState === ws.OPEN; k++) {
    const r = await call(...mix[k % mix.length]);
    tally(r);
    if (r.ok) normalOk[i]++;
  }
  ws.close();
}

async function greedyClient() {
  const ws = await connect();
  const call = caller(ws);
  while (Date.now() < deadline && ws.readyState === ws.OPEN)
    (await Promise.all(Array.from({ length: 32 }, () => call('runs.list')))).forEach(tally);
  ws.close();
}

async function slowReader() {
  const ws = await connect();
  ws._socket.pause(); // never reads a reply
  for (let k = 0; k < 20; k++) ws.send(JSON.stringify({ id: k + 1, method: 'runs.get', params: { id: hugeId } }));
  await new Promise((r) => setTimeout(r, Math.max(0, deadline - Date.now())));
  ws.terminate();
}

async function oversized() {
  while (Date.now() < deadline) {
    try {
      const ws = await connect();
      const closed = new Promise((r) => ws.once('close', r));
      ws.send('x'.repeat(2 << 20));
      await closed;
      counts.refused++;
    } catch {
      counts.refused++;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}

// A prediction that holds a few hundred MB while it simulates (one iteration of a deep,
// checkpointed model), and a sweep of short runs that would go on for minutes.
const heavySpec = (k) => ({
  model: { kind: 'gpt', depth: 192 + 64 * (k % 4), dim: 64, heads: 1, seq: 64, vocab: 100 },
  batch: 1,
  iterations: 1,
  checkpoint: 'block',
});
const sweepSpec = { iterations: 200, batch: 8, model: { kind: 'mlp', in: 64, hidden: 64, out: 8, depth: 6 } };
const heavy = { sent: 0, done: 0, cancelled: 0, busy: 0, error: 0, closed: 0 };
const sweeps = { started: 0, abandoned: 0 };

async function heavyPredictor(i) {
  // Four channels each, in flight together; at the deadline the connection closes with
  // whatever is still unanswered (serve must cancel it).
  while (Date.now() < deadline) {
    const ws = await connect();
    const call = caller(ws);
    const replies = Array.from({ length: 4 }, (_, k) => {
      heavy.sent++;
      requests++;
      return call('run.predict', { spec: heavySpec(i + k), channel: `heavy-${k}` });
    });
    const timer = setTimeout(() => ws.close(), Math.max(0, deadline - Date.now()));
    for (const r of await Promise.all(replies)) {
      if (r.ok) heavy[r.result.status === 'cancelled' ? 'cancelled' : 'done']++;
      else if (r.error.code === 'unavailable') heavy.busy++;
      else if (r.error.code === 'closed') heavy.closed++;
      else heavy.error++;
    }
    clearTimeout(timer);
    ws.close();
  }
}

async function sweepAbandoner() {
  while (Date.now() < deadline) {
    const ws = await connect();
    const call = caller(ws);
    sweeps.started++;
    void call('sweep.start', { spec: sweepSpec, param: 'batch', values: Array.from({ length: 200 }, (_, k) => k + 1) });
    await new Promise((r) => setTimeout(r, 500));
    ws.close();
    sweeps.abandoned++;
  }
}

const runIds = () => readdirSync(path.join(home, 'runs')).filter((n) => /^\d{8}-\d{6}-[0-9a-f]{6}$/.test(n));
const runsOnDisk = () => runIds().length;
/** Runs whose record still says running: a sweep's current run goes on if its client's leaving did not stop it. */
const runningOnDisk = () =>
  runIds().filter((id) => {
    try {
      return JSON.parse(readFileSync(path.join(home, 'runs', id, 'meta.json'), 'utf8')).status === 'running';
    } catch {
      return false;
    }
  }).length;

// One huge-run fetch by a well-behaved client: the reply it gets.
const probe = await connect();
const t0h = Date.now();
const hugeReply = await caller(probe)('runs.get', { id: hugeId });
const hugeMs = Date.now() - t0h;
probe.close();

const t0 = Date.now();
deadline = t0 + SECONDS * 1000;
await Promise.all([
  ...Array.from({ length: CLIENTS }, (_, i) => normalClient(i).catch(() => counts.refused++)),
  ...Array.from({ length: SLOW }, () => slowReader().catch(() => counts.refused++)),
  greedyClient().catch(() => counts.refused++),
  oversized(),
  ...Array.from({ length: HEAVY }, (_, i) => heavyPredictor(i).catch(() => counts.refused++)),
  ...Array.from({ length: SWEEPS }, () => sweepAbandoner().catch(() => counts.refused++)),
]);
const elapsed = (Date.now() - t0) / 1000;

// The abandoned sweeps stop: the run count settles once their connections are gone.
await new Promise((r) => setTimeout(r, 1500));
const runsSettled = runsOnDisk();
const stillRunning = runningOnDisk();
await new Promise((r) => setTimeout(r, 2000));
const runsLater = runsOnDisk();

// Still up?
const last = await connect()
  .then(async (ws) => {
    const r = await caller(ws)('devices.list');
    ws.close();
    return r.ok;
  })
  .catch(() => false);
clearInterval(rssTimer);
serve.kill('SIGTERM');
await new Promise((r) => serve.once('exit', r));
rmSync(home, { recursive: true, force: true });

const report = {
  clients: CLIENTS,
  slowReaders: SLOW,
  seconds: Number(elapsed.toFixed(1)),
  requests,
  requestsPerSecond: Math.round(requests / elapsed),
  replies: counts,
  normalClientOk: normalOk,
  peakRssMB: Math.round(peakRss / 2 ** 20),
  hugeRun: {
    samplesOnDisk: HUGE,
    chunkMB: Math.round(hugeBytes / 2 ** 20),
    replySamples: hugeReply.result?.timeline?.length ?? null,
    replyMs: hugeMs,
    ok: hugeReply.ok,
  },
  heavyPredictions: heavy,
  abandonedSweeps: {
    ...sweeps,
    runsAfterClose: runsSettled,
    runsLater,
    stillRunning,
    stopped: runsLater === runsSettled && stillRunning === 0,
  },
  serveUpAfter: last,
};
if (opt.json) console.log(JSON.stringify(report));
else {
  console.log(`serve load: ${CLIENTS} clients + ${SLOW} slow readers + 1 greedy + oversized frames for ${report.seconds} s`);
  console.log(`  requests/s      ${report.requestsPerSecond} (${requests} requests)`);
  console.log(
    `  replies         ok ${counts.ok}, busy ${counts.busy}, error ${counts.error}, closed ${counts.closed}; oversized/refused ${counts.refused}`,
  );
  console.log(`  serve peak RSS  ${report.peakRssMB} MiB`);
  console.log(
    `  predictions     ${heavy.sent} heavy: done ${heavy.done}, cancelled ${heavy.cancelled}, busy ${heavy.busy}, closed ${heavy.closed}, error ${heavy.error}`,
  );
  console.log(
    `  sweeps          ${sweeps.abandoned} abandoned; runs on disk ${runsSettled} after (${stillRunning} running), ${runsLater} 2 s later (${report.abandonedSweeps.stopped ? 'stopped' : 'STILL RUNNING'})`,
  );
  console.log(
    `  huge run        ${HUGE} samples (${report.hugeRun.chunkMB} MiB on disk) -> ${report.hugeRun.replySamples} samples in ${hugeMs} ms`,
  );
  console.log(`  serve up after  ${last}`);
}
process.exit(last && report.abandonedSweeps.stopped ? 0 : 1);

// `vramlab runs`: list, show, export, rename, delete and compare stored runs.
import { closeSync, openSync, writeFileSync, writeSync } from 'node:fs';
import { parse } from '../args';
import { UsageError, type CliIO, type Command } from '../io';
import { quote } from '../../contract/echo';
import { formatReading } from '../../contract/readings';
import { formatBytes, table } from '../format';
import { defaultHome } from '../../paths';
import { RunStore } from '../../store/store';
import { compareRows } from '../../store/compare';
import { timelineCsv } from '../../export/timeline_csv';
import { summaryCsv } from '../../export/summary_csv';
import { runJsonPieces, runsJson } from '../../export/json';
import { describeRun, runJsonResult } from '../support';

const USAGE = `usage: vramlab runs [list] [--json]
       vramlab runs show ID [--json]
       vramlab runs export ID [--csv FILE] [--json FILE]      the run's timeline (CSV) or all of it (JSON)
       vramlab runs export-summary [ID...] [--csv FILE] [--json FILE]   one row per run (all runs without IDs)
       vramlab runs rename ID NAME
       vramlab runs delete ID...
       vramlab runs compare ID ID... [--json]

Runs live in ${defaultHome()}/runs (VRAMLAB_HOME moves it). The exports need --csv FILE or
--json FILE (both may be given); a FILE of - writes to stdout.
`;

const runs: Command = async (args, io) => {
  // --json is a flag for list/show/compare and takes a FILE for the exports.
  const exporting = args.some((a) => a === 'export' || a === 'export-summary');
  const parsed = exporting
    ? parse(args, { json: { type: 'string' }, csv: { type: 'string' }, help: { type: 'boolean', short: 'h' } }, true)
    : parse(args, { json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } }, true);
  const positionals = parsed.positionals;
  const values = parsed.values as { json?: string | boolean; csv?: string; help?: boolean };
  if (values.help) {
    io.out(USAGE);
    return 0;
  }
  const [sub = 'list', ...rest] = positionals;
  const store = await RunStore.open(defaultHome());
  switch (sub) {
    case 'list':
      return list(store, io, values.json === true);
    case 'show': {
      const id = one(rest, 'show ID');
      const meta = await store.meta(id);
      io.out(values.json === true ? JSON.stringify(runJsonResult(meta)) + '\n' : describeRun(meta));
      return 0;
    }
    case 'export': {
      const id = one(rest, 'export ID');
      if (values.csv === undefined && values.json === undefined) throw new UsageError('export: give --csv FILE or --json FILE');
      if (values.csv !== undefined) emit(io, values.csv, timelineCsv(await store.get(id)));
      // Streamed chunk by chunk: a run of any size is exported whole, never held as one string.
      if (typeof values.json === 'string')
        await emitPieces(
          io,
          values.json,
          runJsonPieces(await store.meta(id), () => store.chunks(id)),
        );
      return 0;
    }
    case 'export-summary': {
      const metas = rest.length ? await Promise.all(rest.map((id) => store.meta(id))) : await store.list();
      if (values.csv === undefined && values.json === undefined) throw new UsageError('export-summary: give --csv FILE or --json FILE');
      if (values.csv !== undefined) emit(io, values.csv, summaryCsv(metas));
      if (typeof values.json === 'string') emit(io, values.json, runsJson(metas) + '\n');
      return 0;
    }
    case 'rename': {
      if (rest.length < 2) throw new UsageError('rename ID NAME');
      const meta = await store.rename(rest[0], rest.slice(1).join(' '));
      io.out(`renamed ${meta.id} to "${meta.name}"\n`);
      return 0;
    }
    case 'delete': {
      if (!rest.length) throw new UsageError('delete ID...');
      for (const id of rest) {
        await store.delete(id);
        io.out(`deleted ${id}\n`);
      }
      return 0;
    }
    case 'compare': {
      if (rest.length < 2) throw new UsageError('compare ID ID...');
      const rows = compareRows(await Promise.all(rest.map((id) => store.meta(id))));
      if (values.json === true) {
        io.out(JSON.stringify(rows) + '\n');
        return 0;
      }
      const keys = [...new Set(rows.flatMap((r) => Object.keys(r.readings)))];
      const specKeys = Object.keys(rows[0].spec).filter((k) => rows.some((r) => r.spec[k] !== rows[0].spec[k]));
      const header = ['', ...rows.map((r) => r.id)];
      const body: string[][] = [
        ['name', ...rows.map((r) => r.name)],
        ['status', ...rows.map((r) => r.status)],
        ...specKeys.map((k) => [k, ...rows.map((r) => String(r.spec[k] ?? ''))]),
        ['peak allocated', ...rows.map((r) => formatBytes(r.peak_allocated))],
        ['peak reserved', ...rows.map((r) => formatBytes(r.peak_reserved))],
        ...keys.map((k) => [k, ...rows.map((r) => (r.readings[k] === undefined ? '' : formatReading(k, r.readings[k])))]),
      ];
      io.out(table(header, body));
      return 0;
    }
    default:
      throw new UsageError(`unknown subcommand ${quote(sub, 40)}\n\n${USAGE}`);
  }
};

async function list(store: RunStore, io: CliIO, json: boolean): Promise<number> {
  const { runs: metas, damaged } = await store.scan();
  for (const p of store.recoveryProblems) io.err(`vramlab runs: warning: ${p}\n`);
  // Damaged runs are reported on stderr, so --json output stays the list it always was.
  for (const d of damaged) io.err(`vramlab runs: skipped run ${d.id}: ${d.problem}\n`);
  if (json) {
    io.out(JSON.stringify(metas) + '\n');
    return 0;
  }
  if (!metas.length) {
    io.out('no runs yet: `vramlab run SPEC.json` makes one\n');
    return 0;
  }
  io.out(
    table(
      ['id', 'name', 'status', 'device', 'peak allocated', 'created'],
      metas.map((m) => [m.id, m.name, m.status, m.device, m.summary ? formatBytes(m.summary.peak_allocated) : '', m.created]),
    ),
  );
  return 0;
}

function one(rest: string[], what: string): string {
  if (rest.length !== 1) throw new UsageError(what);
  return rest[0];
}

async function emitPieces(io: CliIO, file: string, pieces: AsyncIterable<string>): Promise<void> {
  const toStdout = file === '-' || file === '';
  const fd = toStdout ? -1 : openSync(file, 'w');
  try {
    for await (const p of pieces) {
      if (toStdout) io.out(p);
      else writeSync(fd, p);
    }
    if (toStdout) io.out('\n');
    else writeSync(fd, '\n');
  } finally {
    if (!toStdout) closeSync(fd);
  }
}

function emit(io: CliIO, file: string, content: string): void {
  if (file === '-' || file === '') io.out(content);
  else writeFileSync(file, content);
}

export default runs;

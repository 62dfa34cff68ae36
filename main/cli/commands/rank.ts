// `vramlab __rank DIR RANK`: one rank of a job `vramlab run` launched (runner/dist_job.ts);
// the engine spec is DIR/spec.json, the result goes to DIR/rank<RANK>.json. Not for people.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { loadAddon } from '../../addon/load';
import type { Command } from '../io';

const rank: Command = async (args, io) => {
  const [dir, r] = args;
  if (!dir || !/^\d+$/.test(r ?? '')) {
    io.err('usage: vramlab __rank DIR RANK (started by vramlab run)\n');
    return 2;
  }
  const spec = JSON.parse(readFileSync(path.join(dir, 'spec.json'), 'utf8'));
  return loadAddon().runRank(spec, Number(r), dir);
};

export default rank;

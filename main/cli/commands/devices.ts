import { loadAddon } from '../../addon/load';
import { parse } from '../args';
import { formatBytes, table } from '../format';
import type { Command } from '../io';

const devices: Command = async (args, io) => {
  const { values } = parse(args, { json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } });
  if (values.help) {
    io.out('usage: vramlab devices [--json]\n\nLists the simulated GPU presets and every CUDA GPU found.\n');
    return 0;
  }
  const list = loadAddon().listDevices();
  if (values.json) {
    io.out(JSON.stringify(list, null, 2) + '\n');
    return 0;
  }
  io.out(
    table(
      ['id', 'name', 'total', 'CUDA context', '', 'free'],
      list.map((d) => [d.id, d.name, formatBytes(d.total), formatBytes(d.context), d.contextSource ?? '', formatBytes(d.free)]),
    ),
  );
  io.out(
    "\nCUDA context: memory outside PyTorch (context, cuBLAS, kernels); the allocator gets the rest; measured on that card, or estimated (--json says how). sim:custom:SIZE has none (a generic GPU; sim:custom:SIZE@PRESET is that preset's GPU at SIZE).\n",
  );
  if (!list.some((d) => d.kind === 'cuda')) io.out('\nNo CUDA GPU found: experiments run on a simulated device.\n');
  return 0;
};

export default devices;

// `vramlab remedies SPEC.json`: does it fit, and if not (or tightly), which changes do. Each
// candidate is simulated on the spec's card; only those that fit are listed, cheapest first.
import { parse } from '../args';
import type { Command } from '../io';
import { formatBytes, table } from '../format';
import { loadSpecFile } from '../support';
import { loadAddon } from '../../addon/load';
import { checkRemedies } from '../../runner/remedies';
import { verdictLine } from '../../contract/verdict';

const USAGE = `usage: vramlab remedies SPEC.json [--device ID] [--capacity SIZE] [--json]

Says whether SPEC.json fits on its card (PyTorch's peak reserved plus the CUDA context, as
nvidia-smi sees it) and, if not, what it needs and how much is missing. Then simulates each
candidate change (allocator settings, checkpointing, a smaller batch with accumulation to the
same effective batch, bf16, LoRA, the smallest larger card) and lists those that fit, cheapest
first: free settings, then extra compute, then changes to what is trained, then hardware.
Nothing is stored in the run store.
`;

const remedies: Command = async (args, io) => {
  const { values, positionals } = parse(
    args,
    {
      device: { type: 'string' },
      capacity: { type: 'string' },
      json: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
    true,
  );
  if (values.help) {
    io.out(USAGE);
    return 0;
  }
  if (positionals.length !== 1) {
    io.err(USAGE);
    return 2;
  }
  const { spec } = loadSpecFile(positionals[0], { device: values.device, capacity: values.capacity });
  const result = await checkRemedies(loadAddon(), spec);
  if (values.json) {
    io.out(JSON.stringify(result) + '\n');
    return 0;
  }
  io.out(`${verdictLine(result.verdict)} (${result.parameters.toLocaleString('en-US')} parameters)\n`);
  if (!result.remedies.length) io.out('\nno candidate change fits on this card\n');
  else
    io.out(
      '\n' +
        table(
          ['change', 'on the card', 'headroom', 'cost', 'step time', 'same training'],
          result.remedies.map((r) => [
            r.label,
            formatBytes(r.verdict.on_card),
            formatBytes(r.verdict.margin),
            `${r.cost}: ${r.cost_note}`,
            r.time_ratio === null ? '' : `${r.time_ratio.toFixed(2)}x`,
            r.same_training ? 'yes' : 'no',
          ]),
        ),
    );
  if (result.rejected.length) io.out(`\nsimulated, still out of memory: ${result.rejected.map((r) => r.label).join('; ')}\n`);
  return 0;
};

export default remedies;

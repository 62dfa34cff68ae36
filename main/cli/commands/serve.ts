import { existsSync } from 'node:fs';
import path from 'node:path';
import { loadAddon } from '../../addon/load';
import { createHost } from '../../host/create';
import { rendererDist } from '../../paths';
import { startServer } from '../../server/server';
import { parse } from '../args';
import { UsageError, type Command } from '../io';

const serve: Command = async (args, io) => {
  const { values } = parse(args, {
    host: { type: 'string', default: '127.0.0.1' },
    port: { type: 'string', default: '0' },
    help: { type: 'boolean', short: 'h' },
  });
  if (values.help) {
    io.out(
      'usage: vramlab serve [--host 127.0.0.1] [--port N]\n\n' +
        'Serves the lab to a browser. Binds 127.0.0.1 by default; open the printed URL (it carries the\n' +
        'access token). On a GPU server, forward the port over SSH: ssh -L 8765:127.0.0.1:8765 gpu-box\n',
    );
    return 0;
  }
  const port = Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new UsageError(`--port must be 0..65535, got "${values.port}"`);
  const rendererDir = rendererDist();
  if (!existsSync(path.join(rendererDir, 'index.html')))
    throw new Error(`the interface is not built (${rendererDir}); run \`npm run build\``);
  const host = createHost(loadAddon());
  const server = await startServer({ host, bind: values.host, port, rendererDir });
  io.out(`vramlab is serving on ${server.url}\n`);
  if (values.host !== '127.0.0.1' && values.host !== 'localhost')
    io.err(`warning: bound to ${values.host}: anyone who can reach this address and has the token can use the lab\n`);
  io.out('Press Ctrl+C to stop.\n');
  await new Promise<void>((resolve) => {
    const stop = () => resolve();
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  await server.close();
  host.dispose();
  return 0;
};

export default serve;

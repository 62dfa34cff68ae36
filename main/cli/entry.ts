// Bundle entry for dist/cli.js.
import { main } from './main';

export async function run(argv: string[]): Promise<number> {
  return main(argv);
}

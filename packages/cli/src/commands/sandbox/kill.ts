/** `warren sandbox kill <id...>` (alias rm): destroys sandboxes, printing each id. */
import { Sandbox } from '@warren/sdk';
import type { Command } from 'commander';
import { connection } from '../../connection';
import type { Io } from '../../io';

export function register(sandbox: Command, io: Io): void {
  sandbox
    .command('kill')
    .alias('rm')
    .description('destroy sandboxes')
    .argument('<id...>', 'sandbox ids')
    .action(async (ids: string[], _opts: unknown, cmd: Command) => {
      const conn = connection(cmd);
      for (const id of ids) {
        await Sandbox.kill(id, conn);
        io.stdout.write(`${id}\n`);
      }
    });
}

/** `warren key revoke <id>...`: revokes keys; they stop working at once. */
import { Keys } from '@warren/sdk';
import type { Command } from 'commander';
import { connection } from '../../connection';
import type { Io } from '../../io';

export function register(key: Command, io: Io): void {
  key
    .command('revoke')
    .alias('rm')
    .description('revoke API keys')
    .argument('<id...>', 'key ids (tok_...)')
    .action(async (ids: string[], _opts: unknown, cmd: Command) => {
      for (const id of ids) {
        await Keys.revoke(id, connection(cmd));
        io.stdout.write(`${id}\n`);
      }
    });
}

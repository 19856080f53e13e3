/** `warren volume rm <name>...`: deletes volumes and their data (refused while attached). */
import { Volumes } from '@warren/sdk';
import type { Command } from 'commander';
import { connection } from '../../connection';
import type { Io } from '../../io';

export function register(volume: Command, io: Io): void {
  volume
    .command('rm')
    .alias('delete')
    .description('delete volumes and their data')
    .argument('<name...>', 'volume names')
    .action(async (names: string[], _opts: unknown, cmd: Command) => {
      for (const name of names) {
        await Volumes.delete(name, connection(cmd));
        io.stdout.write(`${name}\n`);
      }
    });
}

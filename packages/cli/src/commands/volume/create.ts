/** `warren volume create <name> --size <mb>`: a named volume with a size limit. */
import { Volumes } from '@warren/sdk';
import type { Command } from 'commander';
import { parsePositiveInt } from '../../args';
import { connection } from '../../connection';
import type { Io } from '../../io';

export function register(volume: Command, io: Io): void {
  volume
    .command('create')
    .description('create a volume and print its id')
    .argument('<name>', 'volume name (a-z, 0-9, - and _)')
    .requiredOption('-s, --size <mb>', 'size limit in MiB', parsePositiveInt)
    .option('--json', 'print the volume as JSON')
    .action(async (name: string, opts: { size: number; json?: boolean }, cmd: Command) => {
      const vol = await Volumes.create(name, opts.size, connection(cmd));
      io.stdout.write(opts.json ? `${JSON.stringify(vol, null, 2)}\n` : `${vol.id}\n`);
    });
}

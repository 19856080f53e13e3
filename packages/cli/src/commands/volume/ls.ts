/** `warren volume ls`: volumes with their size, use and holders. */
import { Volumes } from '@warren/sdk';
import type { Command } from 'commander';
import { connection } from '../../connection';
import { relativeTime, table } from '../../format';
import type { Io } from '../../io';

export function register(volume: Command, io: Io): void {
  volume
    .command('ls')
    .alias('list')
    .description('list volumes')
    .option('--json', 'print JSON')
    .action(async (opts: { json?: boolean }, cmd: Command) => {
      const items = await Volumes.list(connection(cmd));
      if (opts.json) {
        io.stdout.write(`${JSON.stringify(items, null, 2)}\n`);
        return;
      }
      const rows = items.map((v) => [
        v.name,
        `${v.size_mb} MB`,
        `${(v.used_bytes / 1024 / 1024).toFixed(1)} MB`,
        v.attachments.map((a) => `${a.sandbox_id}${a.read_only ? ' (ro)' : ''}`).join(', ') || '-',
        relativeTime(v.created_at),
      ]);
      io.stdout.write(table(['NAME', 'SIZE', 'USED', 'ATTACHED TO', 'CREATED'], rows));
    });
}

/** `warren key ls`: keys with their prefix, scopes, restriction and use (never the secrets). */
import { Keys } from '@warren/sdk';
import type { Command } from 'commander';
import { connection } from '../../connection';
import { relativeTime, table } from '../../format';
import type { Io } from '../../io';

export function register(key: Command, io: Io): void {
  key
    .command('ls')
    .alias('list')
    .description('list API keys')
    .option('--json', 'print JSON')
    .action(async (opts: { json?: boolean }, cmd: Command) => {
      const items = await Keys.list(connection(cmd));
      if (opts.json) {
        io.stdout.write(`${JSON.stringify(items, null, 2)}\n`);
        return;
      }
      const rows = items.map((k) => {
        const labels = Object.entries(k.sandbox_labels ?? {}).map(([n, v]) => `${n}=${v}`);
        const only = [...(k.sandbox_id ? [k.sandbox_id] : []), ...labels].join(' ') || '-';
        return [
          k.id,
          k.name,
          `${k.prefix}...`,
          k.scopes.join(','),
          only,
          k.expires_at ?? '-',
          k.last_used_at ? relativeTime(k.last_used_at) : '-',
        ];
      });
      io.stdout.write(
        table(['ID', 'NAME', 'PREFIX', 'SCOPES', 'RESTRICTED TO', 'EXPIRES', 'LAST USED'], rows),
      );
    });
}

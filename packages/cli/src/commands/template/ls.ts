/** `warren template ls`: the templates sandboxes can start from. */
import { listTemplates } from '@warren/sdk';
import type { Command } from 'commander';
import { connection } from '../../connection';
import { relativeTime, table } from '../../format';
import type { Io } from '../../io';

export function register(template: Command, io: Io): void {
  template
    .command('ls')
    .alias('list')
    .description('list templates')
    .option('--json', 'print JSON')
    .action(async (opts: { json?: boolean }, cmd: Command) => {
      const items = await listTemplates(connection(cmd));
      if (opts.json) {
        io.stdout.write(`${JSON.stringify(items, null, 2)}\n`);
        return;
      }
      const rows = items.map((t) => [
        t.name,
        t.state,
        `${t.default_cpu} (max ${t.max_cpu})`,
        `${t.default_memory_mb} MB (max ${t.max_memory_mb})`,
        t.built_at ? relativeTime(t.built_at) : '-',
      ]);
      io.stdout.write(table(['NAME', 'STATE', 'CPU', 'MEMORY', 'BUILT'], rows));
      // How to build what is not built, on stderr so the table stays parseable.
      for (const t of items)
        if (t.state !== 'ready' && t.state !== 'building' && t.build)
          io.stderr.write(`${t.name} is ${t.state.replace('_', ' ')}: ${t.build.cli}\n`);
    });
}

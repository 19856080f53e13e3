/** `warren usage`: usage totals over a range, grouped by organisation, template or a label. */
import { getUsage, type UsageOptions } from '@warren/sdk';
import type { Command } from 'commander';
import { connection } from '../../connection';
import { table } from '../../format';
import type { Io } from '../../io';

const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`;

export function register(program: Command, io: Io): void {
  program
    .command('usage')
    .description('usage totals (CPU, memory, disk, network) over a range, grouped')
    .option('--from <time>', 'start of the range, ISO 8601 (default: 24 hours before --to)')
    .option('--to <time>', 'end of the range, ISO 8601 (default: now)')
    .option('--group-by <by>', 'organisation, template or label:<key>', 'organisation')
    .option('--org <id>', "only this organisation (the install's admin)")
    .option('--json', 'print JSON')
    .action(
      async (
        opts: { from?: string; to?: string; groupBy: string; org?: string; json?: boolean },
        cmd: Command,
      ) => {
        const report = await getUsage({
          ...connection(cmd),
          from: opts.from,
          to: opts.to,
          groupBy: opts.groupBy as UsageOptions['groupBy'],
          orgId: opts.org,
        });
        if (opts.json) {
          io.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
          return;
        }
        const rows = report.groups.map((g) => [
          g.key ?? '(none)',
          String(g.sandboxes),
          g.cpu_seconds.toFixed(1),
          g.memory_gb_seconds.toFixed(1),
          g.sandbox_seconds.toFixed(0),
          mb(g.disk_bytes_peak),
          mb(g.net_rx_bytes),
          mb(g.net_tx_bytes),
        ]);
        io.stdout.write(
          table(
            ['GROUP', 'SANDBOXES', 'CPU S', 'MEM GB-S', 'LIVE S', 'DISK PEAK', 'NET IN', 'NET OUT'],
            rows,
          ),
        );
      },
    );
}

/** `warren db events|logs`: what happened to a database, and its server's own log. */
import { Database } from '@warren/sdk';
import type { Command } from 'commander';
import { parsePositiveInt } from '../../args';
import { connection } from '../../connection';
import { table } from '../../format';
import type { Io } from '../../io';

export function register(db: Command, io: Io): void {
  db.command('events')
    .description('what the platform did with a database (created, hibernated, woken, crashed, ...)')
    .argument('<id>')
    .option('--json', 'print JSON')
    .action(async (id: string, o: { json?: boolean }, cmd: Command) => {
      const items = await Database.events(id, connection(cmd));
      if (o.json) return void io.stdout.write(`${JSON.stringify(items, null, 2)}\n`);
      io.stdout.write(
        table(
          ['WHEN', 'KIND', 'MESSAGE'],
          items.map((e) => [e.at, e.kind, e.message]),
        ),
      );
    });

  db.command('logs')
    .description('the last lines of the PostgreSQL server log (wakes a hibernated database)')
    .argument('<id>')
    .option('-n, --lines <n>', 'how many lines (at most 10000)', parsePositiveInt, 200)
    .action(async (id: string, o: { lines: number }, cmd: Command) => {
      for (const line of await Database.logs(id, o.lines, connection(cmd)))
        io.stdout.write(`${line}\n`);
    });
}

/** `warren db create|ls|get|rm|restore|branch`: managed PostgreSQL databases. */
import { Database, type DatabaseInfo } from '@warren/sdk';
import type { Command } from 'commander';
import { parsePositiveInt } from '../../args';
import { connection } from '../../connection';
import { relativeTime, table } from '../../format';
import type { Io } from '../../io';

const print = (io: Io, db: DatabaseInfo, json?: boolean) =>
  io.stdout.write(
    json ? `${JSON.stringify(db, null, 2)}\n` : `${db.id}\n${db.connection_url}?sslmode=require\n`,
  );

export function register(db: Command, io: Io): void {
  db.command('create')
    .description('create a PostgreSQL database; prints its id and connection URL')
    .argument('<label>', 'a name for people')
    .option('--cpu <n>', 'vCPUs', Number)
    .option('--memory <mb>', 'memory limit in MiB', parsePositiveInt)
    .option('--disk <mb>', 'data volume size in MiB', parsePositiveInt)
    .option('--scale-to-zero <seconds>', 'hibernate after this long without connections', Number)
    .option('--json', 'print the database as JSON')
    .action(
      async (label: string, o: Record<string, number | boolean | undefined>, cmd: Command) => {
        const created = await Database.create(
          {
            label,
            ...(o.cpu !== undefined && { cpu: o.cpu as number }),
            ...(o.memory !== undefined && { memory_mb: o.memory as number }),
            ...(o.disk !== undefined && { disk_mb: o.disk as number }),
            ...(o.scaleToZero !== undefined && { scale_to_zero_seconds: o.scaleToZero as number }),
          },
          connection(cmd),
        );
        print(io, created, o.json === true);
      },
    );

  db.command('ls')
    .alias('list')
    .description('list databases')
    .option('--json', 'print JSON')
    .action(async (o: { json?: boolean }, cmd: Command) => {
      const items = await Database.list(connection(cmd));
      if (o.json) return void io.stdout.write(`${JSON.stringify(items, null, 2)}\n`);
      const rows = items.map((d) => [
        d.id,
        d.label,
        d.state,
        `${d.cpu} vCPU, ${d.memory_mb} MB`,
        `${d.disk_mb} MB`,
        relativeTime(d.created_at),
      ]);
      io.stdout.write(table(['ID', 'LABEL', 'STATE', 'SIZE', 'DISK', 'CREATED'], rows));
    });

  db.command('get')
    .description('show a database (JSON), with its URLs')
    .argument('<id>')
    .action(async (id: string, _o: unknown, cmd: Command) => {
      print(io, await Database.get(id, connection(cmd)), true);
    });

  db.command('rm')
    .alias('delete')
    .description('delete databases: their data and archives are gone')
    .argument('<id...>')
    .action(async (ids: string[], _o: unknown, cmd: Command) => {
      for (const id of ids) {
        await Database.delete(id, connection(cmd));
        io.stdout.write(`${id}\n`);
      }
    });

  db.command('restore')
    .description('a new database from this one’s archive, at --time or the latest')
    .argument('<id>')
    .option('--time <iso>', 'target time (ISO 8601)')
    .option('--label <label>')
    .option('--json', 'print the new database as JSON')
    .action(
      async (id: string, o: { time?: string; label?: string; json?: boolean }, cmd: Command) => {
        const made = await Database.restore(
          id,
          { ...(o.time && { target_time: o.time }), ...(o.label && { label: o.label }) },
          connection(cmd),
        );
        print(io, made, o.json);
      },
    );

  db.command('branch')
    .description('a new database with this one’s data as of now')
    .argument('<id>')
    .option('--label <label>')
    .option('--json', 'print the new database as JSON')
    .action(async (id: string, o: { label?: string; json?: boolean }, cmd: Command) => {
      const made = await Database.branch(id, o.label ? { label: o.label } : {}, connection(cmd));
      print(io, made, o.json);
    });
}

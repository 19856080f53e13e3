/** `warren host token|ls|drain|rm`: the hosts of the install (its admin only; docs/multi-host.md). */
import { Hosts, type Host } from '@warren/sdk';
import type { Command } from 'commander';
import { connection } from '../../connection';
import { table } from '../../format';
import type { Io } from '../../io';

function show(hosts: Host[]): string {
  return table(
    ['id', 'state', 'sandboxes', 'memory free', 'lease until', 'url'],
    hosts.map((h) => [
      h.local ? `${h.id} (local)` : h.id,
      h.connected || h.state === 'lost' ? h.state : `${h.state}, not connected`,
      String(h.sandboxes),
      h.capacity ? `${h.capacity.memory_budget_mb - (h.capacity.memory_used_mb ?? 0)} MiB` : '',
      h.local ? '' : h.lease_expires_at,
      h.url,
    ]),
  );
}

export function register(program: Command, io: Io): void {
  const host = program.command('host').description('manage the hosts of the install (admin)');
  host
    .command('token')
    .description('make a one-use join token for `warren agent --join-token`')
    .option('--ttl <seconds>', 'how long it is good for (default 3600)', Number)
    .action(async (opts: { ttl?: number }, cmd: Command) => {
      const t = await Hosts.joinToken(opts.ttl, connection(cmd));
      io.stdout.write(`${t.token}\n`);
      io.stderr.write(`good for one join until ${t.expires_at}\n`);
    });
  host
    .command('ls')
    .description('list hosts: state, sandboxes, free memory, lease')
    .option('--json', 'print JSON')
    .action(async (opts: { json?: boolean }, cmd: Command) => {
      const hosts = await Hosts.list(connection(cmd));
      io.stdout.write(opts.json ? `${JSON.stringify(hosts, null, 2)}\n` : `${show(hosts)}\n`);
    });
  host
    .command('drain <id>')
    .description('place no new sandboxes on a host, and move its persistent ones elsewhere')
    .action(async (id: string, _o: object, cmd: Command) => {
      const h = await Hosts.drain(id, connection(cmd));
      io.stdout.write(`${h.id} ${h.state}: ${h.sandboxes} sandboxes still on it\n`);
    });
  host
    .command('rm <id>')
    .description('forget a host that owns no live sandbox (or was lost)')
    .action(async (id: string, _o: object, cmd: Command) => {
      await Hosts.remove(id, connection(cmd));
      io.stdout.write(`removed ${id}\n`);
    });
}

/** `warren audit`: the organisation's audit log, newest first, with the API's filters. */
import { Audit } from '@warren/sdk';
import type { Command } from 'commander';
import { connection } from '../../connection';
import { relativeTime, table } from '../../format';
import type { Io } from '../../io';

interface Options {
  json?: boolean;
  limit?: string;
  before?: string;
  actor?: string;
  resourceType?: string;
  resource?: string;
  action?: string;
  result?: 'success' | 'failure';
  errorCode?: string;
  requestId?: string;
  since?: string;
  until?: string;
  org?: string;
}

export function register(program: Command, io: Io): void {
  program
    .command('audit')
    .description('show the audit log of your organisation, newest first')
    .option('--limit <n>', 'how many events (1-1000)', '50')
    .option('--before <id>', 'events older than this id (paging)')
    .option('--actor <id>', 'the acting key id or JWT subject')
    .option('--resource-type <type>', 'sandbox, snapshot, template, volume, database, key, ...')
    .option('--resource <id>', 'the resource id')
    .option('--action <action>', 'exact action, or a prefix ending in *')
    .option('--result <result>', 'success or failure')
    .option('--error-code <code>', 'a Warren error code')
    .option('--request-id <id>', 'the x-request-id of a call')
    .option('--since <time>', 'at or after (ISO 8601)')
    .option('--until <time>', 'before (ISO 8601)')
    .option('--org <id>', "another organisation's log (the install's admin only)")
    .option('--json', 'print JSON')
    .action(async (o: Options, cmd: Command) => {
      const filter: NonNullable<Parameters<typeof Audit.list>[0]> = {
        limit: Number(o.limit),
        before: o.before === undefined ? undefined : Number(o.before),
        actor: o.actor,
        resource_type: o.resourceType,
        resource_id: o.resource,
        action: o.action,
        result: o.result,
        error_code: o.errorCode,
        request_id: o.requestId,
        since: o.since,
        until: o.until,
        org_id: o.org,
      };
      const page = await Audit.list(filter, connection(cmd));
      if (o.json) {
        io.stdout.write(`${JSON.stringify(page, null, 2)}\n`);
        return;
      }
      const rows = page.items.map((e) => [
        String(e.id),
        relativeTime(e.at),
        e.actor ?? '-',
        e.action,
        e.resource_id ?? '-',
        String(e.status),
        e.error_code ?? '',
      ]);
      io.stdout.write(
        table(['ID', 'WHEN', 'ACTOR', 'ACTION', 'RESOURCE', 'STATUS', 'ERROR'], rows),
      );
      if (page.next_before !== null) io.stdout.write(`more: --before ${page.next_before}\n`);
    });
}

/** `warren sandbox ls`: a table of sandboxes, or JSON with --json. */
import { Sandbox, type SandboxState } from '@warren/sdk';
import { Option, type Command } from 'commander';
import { collectKeyValue, nonEmpty } from '../../args';
import { connection } from '../../connection';
import { relativeTime, table } from '../../format';
import type { Io } from '../../io';

const STATES: SandboxState[] = ['creating', 'running', 'stopping', 'stopped', 'error'];

interface Options {
  state?: SandboxState;
  meta?: Record<string, string>;
  json?: boolean;
}

export function register(sandbox: Command, io: Io): void {
  sandbox
    .command('ls')
    .alias('list')
    .description('list sandboxes')
    .addOption(new Option('--state <state>', 'only sandboxes in this state').choices(STATES))
    .option(
      '-m, --meta <KEY=VALUE>',
      'only sandboxes with this metadata label (repeatable)',
      collectKeyValue,
    )
    .option('--json', 'print JSON')
    .action(async (opts: Options, cmd: Command) => {
      const items = await Sandbox.list({
        ...connection(cmd),
        state: opts.state,
        metadata: nonEmpty(opts.meta),
      });
      if (opts.json) {
        io.stdout.write(`${JSON.stringify(items, null, 2)}\n`);
        return;
      }
      const rows = items.map((s) => [
        s.id,
        s.template,
        s.state,
        relativeTime(s.created_at),
        relativeTime(s.expires_at),
      ]);
      io.stdout.write(table(['ID', 'TEMPLATE', 'STATE', 'CREATED', 'EXPIRES'], rows));
    });
}

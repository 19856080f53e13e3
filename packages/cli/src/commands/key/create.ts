/** `warren key create <name> --scope <scope>...`: a scoped API key, printed once. */
import { Keys, SCOPES, type Scope } from '@warren/sdk';
import { InvalidArgumentError, type Command } from 'commander';
import { collectKeyValue, nonEmpty, parsePositiveInt } from '../../args';
import { connection } from '../../connection';
import type { Io } from '../../io';

function collectScope(text: string, previous: Scope[] = []): Scope[] {
  for (const s of text.split(',')) {
    if (!(SCOPES as readonly string[]).includes(s))
      throw new InvalidArgumentError(`unknown scope ${s}: one of ${SCOPES.join(', ')}`);
    previous.push(s as Scope);
  }
  return previous;
}

interface Opts {
  scope: Scope[];
  ttl?: number;
  expiresAt?: string;
  sandbox?: string;
  label?: Record<string, string>;
  org?: string;
  json?: boolean;
}

export function register(key: Command, io: Io): void {
  key
    .command('create')
    .description('create an API key and print it (it is shown only once)')
    .argument('<name>', 'a name for the key')
    .requiredOption(
      '--scope <scope>',
      `scopes, repeatable or comma-separated: ${SCOPES.join(', ')}`,
      collectScope,
    )
    .option('--ttl <seconds>', 'expire after this many seconds', parsePositiveInt)
    .option('--expires-at <time>', 'expire at this ISO 8601 time')
    .option('--sandbox <id>', 'restrict the key to this sandbox')
    .option(
      '--label <key=value>',
      'restrict the key to sandboxes with this label (repeatable)',
      collectKeyValue,
    )
    .option('--org <id>', "a key of another organisation (the install's admin only)")
    .option('--json', 'print the key record as JSON, the key included')
    .action(async (name: string, opts: Opts, cmd: Command) => {
      const created = await Keys.create(
        name,
        {
          scopes: opts.scope,
          ...(opts.ttl !== undefined && { ttlSeconds: opts.ttl }),
          ...(opts.expiresAt !== undefined && { expiresAt: opts.expiresAt }),
          ...(opts.sandbox !== undefined && { sandboxId: opts.sandbox }),
          ...(nonEmpty(opts.label) && { sandboxLabels: nonEmpty(opts.label) }),
          ...(opts.org !== undefined && { orgId: opts.org }),
        },
        connection(cmd),
      );
      io.stdout.write(opts.json ? `${JSON.stringify(created, null, 2)}\n` : `${created.key}\n`);
      if (!opts.json) io.stderr.write(`${created.id}: keep the key now, it is not shown again\n`);
    });
}

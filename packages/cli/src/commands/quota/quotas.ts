/** `warren quotas [--org <id>] [--set name=value ...]`: limits and use of an organisation. */
import { Quotas, type OrganisationQuotas, type QuotaOverrides } from '@warren/sdk';
import { InvalidArgumentError, type Command } from 'commander';
import { parseKeyValue } from '../../args';
import { connection } from '../../connection';
import { table } from '../../format';
import type { Io } from '../../io';

const NAMES = [
  'sandboxes',
  'memory_mb',
  'disk_mb',
  'databases',
  'snapshot_bytes',
  'creates_burst',
  'creates_per_second',
] as const;

/** Option parser for repeatable `--set name=value`: folds each into the overrides. */
function collectQuota(text: string, previous: QuotaOverrides = {}): QuotaOverrides {
  const [name, value] = parseKeyValue(text);
  if (!(NAMES as readonly string[]).includes(name))
    throw new InvalidArgumentError(`unknown quota ${name}: one of ${NAMES.join(', ')}`);
  const n = value === 'unlimited' ? null : Number(value);
  if (n !== null && !(Number.isFinite(n) && n >= 0))
    throw new InvalidArgumentError(`${name}: a number or unlimited, not ${value}`);
  return { ...previous, [name]: n };
}

function show(q: OrganisationQuotas): string {
  const use = q.usage as Record<string, number | null>;
  const rows = NAMES.map((name) => {
    const limit = q.limits[name];
    const used = name === 'creates_burst' ? use.creates_available : use[name];
    return [
      name,
      limit === null ? 'unlimited' : String(limit),
      name in q.overrides ? 'override' : 'default',
      name === 'creates_per_second' ? '' : String(used ?? ''),
    ];
  });
  return table(['quota', 'limit', 'from', 'in use (creates: available)'], rows);
}

export function register(program: Command, io: Io): void {
  program
    .command('quotas')
    .alias('quota')
    .description("show your organisation's quotas and use, or set another's (install admin)")
    .option('--org <id>', "another organisation (the install's admin only)")
    .option(
      '--set <name=value>',
      'replace the overrides (repeatable; unlimited for none; needs --org)',
      collectQuota,
    )
    .option('--json', 'print JSON')
    .action(async (opts: { org?: string; set?: QuotaOverrides; json?: boolean }, cmd: Command) => {
      const conn = connection(cmd);
      if (opts.set && !opts.org) cmd.error('error: --set needs --org <id>');
      const q = opts.set
        ? await Quotas.set(opts.org!, opts.set, conn)
        : await Quotas.get(opts.org, conn);
      io.stdout.write(opts.json ? `${JSON.stringify(q, null, 2)}\n` : `${show(q)}\n`);
    });
}

/** `warren sandbox create`: prints the new sandbox id (or its JSON with --json). */
import { Sandbox } from '@warren/sdk';
import type { Command } from 'commander';
import {
  collectKeyValue,
  collectVolume,
  nonEmpty,
  parsePositiveInt,
  parsePositiveNumber,
} from '../../args';
import { connection } from '../../connection';
import type { Io } from '../../io';

interface Options {
  template: string;
  ttl?: number;
  memory?: number;
  cpu?: number;
  disk?: number;
  volume?: Array<{ name: string; mount_path: string; read_only: boolean }>;
  env?: Record<string, string>;
  meta?: Record<string, string>;
  json?: boolean;
}

export function register(sandbox: Command, io: Io): void {
  sandbox
    .command('create')
    .description('create a sandbox and print its id')
    .option('-t, --template <name>', 'template to start from', 'base')
    .option('--ttl <seconds>', 'destroy after this long without API activity', parsePositiveInt)
    .option('--memory <mb>', 'memory limit in MB', parsePositiveInt)
    .option('--cpu <n>', 'vCPUs', parsePositiveNumber)
    .option('--disk <mb>', 'size limit of written files in MB', parsePositiveInt)
    .option(
      '-v, --volume <NAME:PATH[:ro]>',
      'attach a volume at PATH, read-only with :ro (repeatable)',
      collectVolume,
    )
    .option(
      '-e, --env <KEY=VALUE>',
      'environment variable for every command (repeatable)',
      collectKeyValue,
    )
    .option('-m, --meta <KEY=VALUE>', 'metadata label (repeatable)', collectKeyValue)
    .option('--json', 'print the whole sandbox as JSON')
    .action(async (opts: Options, cmd: Command) => {
      const sbx = await Sandbox.create({
        ...connection(cmd),
        template: opts.template,
        ttlSeconds: opts.ttl,
        memoryMb: opts.memory,
        cpu: opts.cpu,
        diskMb: opts.disk,
        volumes: opts.volume,
        env: nonEmpty(opts.env),
        metadata: nonEmpty(opts.meta),
      });
      io.stdout.write(opts.json ? `${JSON.stringify(sbx.info, null, 2)}\n` : `${sbx.id}\n`);
    });
}

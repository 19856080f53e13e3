/** `warren template get <name>`: one template: sizing, sizes, layers, start command, build time. */
import { getTemplate } from '@warren/sdk';
import type { Command } from 'commander';
import { connection } from '../../connection';
import type { Io } from '../../io';

const MiB = 1024 * 1024;

export function register(template: Command, io: Io): void {
  template
    .command('get')
    .alias('inspect')
    .description('show a template')
    .argument('<name>', 'template name')
    .option('--json', 'print JSON')
    .action(async (name: string, opts: { json?: boolean }, cmd: Command) => {
      const t = await getTemplate(name, connection(cmd));
      if (opts.json) {
        io.stdout.write(`${JSON.stringify(t, null, 2)}\n`);
        return;
      }
      const rows: Array<[string, string]> = [
        ['name', t.name],
        ['state', t.state],
        ['source', `${t.source ?? 'builtin'}${t.base ? ` (base ${t.base})` : ''}`],
        ['cpu', `${t.default_cpu} (max ${t.max_cpu})`],
        ['memory', `${t.default_memory_mb} MB (max ${t.max_memory_mb})`],
        ['rootfs', `${(t.rootfs_bytes / MiB).toFixed(1)} MiB`],
        ['snapshot', `${(t.snapshot_bytes / MiB).toFixed(1)} MiB`],
        [
          'built',
          t.built_at
            ? `${t.built_at}${t.build_ms !== undefined ? ` in ${(t.build_ms / 1000).toFixed(1)} s` : ''}`
            : 'no',
        ],
      ];
      if (t.description) rows.splice(1, 0, ['about', t.description]);
      if (t.error) rows.push(['error', t.error]);
      if (t.state !== 'ready' && t.build) rows.push(['build', `${t.build.cli} (${t.build.api})`]);
      if (t.workdir) rows.push(['workdir', t.workdir]);
      if (t.user) rows.push(['user', t.user]);
      if (t.start) rows.push(['start', JSON.stringify(t.start)]);
      if (t.ready) rows.push(['ready', JSON.stringify(t.ready.cmd)]);
      for (const [k, v] of Object.entries(t.env ?? {})) rows.push(['env', `${k}=${v}`]);
      for (const l of t.layers ?? []) rows.push(['layer', `${l.digest} ${l.size} bytes`]);
      for (const [k, v] of rows) io.stdout.write(`${k.padEnd(9)} ${v}\n`);
    });
}

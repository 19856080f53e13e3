/**
 * `warren template rebuild <name>`: builds a template again, streaming the log.
 * For an official template that was never built (code-interpreter, postgres-17) this builds it.
 */
import { rebuildTemplate } from '@warren/sdk';
import type { Command } from 'commander';
import { connection } from '../../connection';
import type { Io } from '../../io';

export function register(template: Command, io: Io): void {
  template
    .command('rebuild')
    .description('build a template again (or build an official template for the first time)')
    .argument('<name>', 'template name')
    .action(async (name: string, _opts: unknown, cmd: Command) => {
      const onLog = (line: string) => void io.stderr.write(`${line}\n`);
      const t = await rebuildTemplate(name, { ...connection(cmd), onLog });
      io.stdout.write(`${t.name}\n`);
    });
}

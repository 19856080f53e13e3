/** `warren template rm <name...>`: deletes templates (refused while sandboxes or snapshots use them). */
import { deleteTemplate } from '@warren/sdk';
import type { Command } from 'commander';
import { connection } from '../../connection';
import type { Io } from '../../io';

export function register(template: Command, io: Io): void {
  template
    .command('rm')
    .alias('delete')
    .description('delete templates')
    .argument('<name...>', 'template names')
    .action(async (names: string[], _opts: unknown, cmd: Command) => {
      const conn = connection(cmd);
      for (const name of names) {
        await deleteTemplate(name, conn);
        io.stdout.write(`${name}\n`);
      }
    });
}

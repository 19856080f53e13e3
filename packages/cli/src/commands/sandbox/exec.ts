/**
 * `warren sandbox exec <id> -- <cmd> [args...]`: runs a program in the
 * sandbox, streaming its output live, and exits with its exit code. Like
 * `docker exec`, the program runs directly; use `-- sh -c '...'` for a shell line.
 */
import { Sandbox } from '@warren/sdk';
import type { Command } from 'commander';
import { collectKeyValue, nonEmpty, parsePositiveNumber } from '../../args';
import { connection } from '../../connection';
import { readAll, writerFor, type Io } from '../../io';

interface Options {
  env?: Record<string, string>;
  cwd?: string;
  timeout?: number;
  stdin?: boolean;
}

export function register(sandbox: Command, io: Io): void {
  sandbox
    .command('exec')
    .description('run a command in a sandbox, streaming its output, and exit with its exit code')
    .argument('<id>', 'sandbox id')
    .argument('<cmd>', 'program to run (put -- before it when it has options)')
    .argument('[args...]', 'its arguments')
    .option('-e, --env <KEY=VALUE>', 'environment variable (repeatable)', collectKeyValue)
    .option('-w, --cwd <dir>', 'working directory')
    .option('--timeout <seconds>', 'kill the command after this long', parsePositiveNumber)
    .option('-i, --stdin', "read this terminal's stdin to the end and send it to the command")
    .action(async (id: string, program: string, args: string[], opts: Options, cmd: Command) => {
      const stdin = opts.stdin ? await readAll(io.stdin) : undefined;
      const sbx = await Sandbox.connect(id, connection(cmd));
      const result = await sbx.commands.run(program, {
        args,
        env: nonEmpty(opts.env),
        cwd: opts.cwd,
        timeout: opts.timeout,
        stdin,
        onStdout: writerFor(io.stdout),
        onStderr: writerFor(io.stderr),
      });
      if (result.timedOut) io.stderr.write(`warren: command timed out after ${opts.timeout}s\n`);
      io.exitCode = result.exitCode;
    });
}

/**
 * `warren sandbox code <id> <code>`: runs code in the sandbox's code
 * interpreter (docs/code-interpreter.md), streaming stdout and stderr, then
 * printing the text of each result and the error's traceback. `-` reads the
 * code from stdin. Exits 1 when the code raised an error.
 */
import { Sandbox, WarrenError, type CodeLanguage } from '@warren/sdk';
import type { Command } from 'commander';
import { parsePositiveNumber } from '../../args';
import { connection } from '../../connection';
import { readAll, writerFor, type Io } from '../../io';

interface Options {
  language?: string;
  context?: string;
  timeout?: number;
}

const LANGUAGES = ['python', 'javascript', 'bash'];

export function register(sandbox: Command, io: Io): void {
  sandbox
    .command('code')
    .description("run code in a sandbox's code interpreter (state persists in its context)")
    .argument('<id>', 'sandbox id')
    .argument('<code>', 'the code to run, or - to read it from stdin')
    .option('-l, --language <language>', 'python (default), javascript or bash')
    .option('-c, --context <context_id>', "a context id (default: the language's default)")
    .option('--timeout <seconds>', 'interrupt the run after this long', parsePositiveNumber)
    .action(async (id: string, code: string, opts: Options, cmd: Command) => {
      if (opts.language !== undefined && !LANGUAGES.includes(opts.language))
        throw new WarrenError(
          'INVALID_REQUEST',
          `--language must be one of ${LANGUAGES.join(', ')}`,
        );
      const source = code === '-' ? await readAll(io.stdin) : code;
      const sbx = await Sandbox.connect(id, connection(cmd));
      const exe = await sbx.runCode(source, {
        language: opts.language as CodeLanguage | undefined,
        context: opts.context,
        timeoutMs: opts.timeout !== undefined ? Math.round(opts.timeout * 1000) : undefined,
        onStdout: writerFor(io.stdout),
        onStderr: writerFor(io.stderr),
      });
      for (const r of exe.results) {
        const text = r.text ?? Object.keys(r.data).join(', ');
        io.stdout.write(r.text !== undefined ? `${text}\n` : `[${text}]\n`);
      }
      if (exe.error) {
        io.stderr.write(`${exe.error.traceback || `${exe.error.name}: ${exe.error.value}`}\n`);
        io.exitCode = 1;
      }
    });
}

/**
 * `warren sandbox shell <id> [cmd] [args...]`: an interactive terminal in the
 * sandbox. This terminal goes raw (every keystroke goes to the sandbox, Ctrl-C
 * included), its size follows SIGWINCH, and the CLI exits with the remote exit
 * code. A pause or hibernate of the sandbox only ends the connection: the CLI
 * attaches again (which wakes the sandbox) and the shell carries on.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { Sandbox, type PtyConnection } from '@warren/sdk';
import type { Command } from 'commander';
import { collectKeyValue, nonEmpty } from '../../args';
import { connection } from '../../connection';
import type { Io } from '../../io';

interface Options {
  env?: Record<string, string>;
  cwd?: string;
  user?: string;
  attach?: string;
}

/** Attaches again after a connection that ended at a pause; gives up after this many in a row. */
const MAX_RECONNECTS = 5;

export function register(sandbox: Command, io: Io): void {
  sandbox
    .command('shell')
    .description('open an interactive terminal in a sandbox; exits with its exit code')
    .argument('<id>', 'sandbox id')
    .argument('[cmd]', "program to run (default: the user's shell)")
    .argument('[args...]', 'its arguments')
    .option('-e, --env <KEY=VALUE>', 'environment variable (repeatable)', collectKeyValue)
    .option('-w, --cwd <dir>', 'working directory')
    .option('-u, --user <user>', 'run as this user of the sandbox')
    .option('--attach <pty_id>', 'attach to an existing terminal session instead')
    .action(
      async (id: string, cmd: string | undefined, args: string[], opts: Options, c: Command) => {
        const sbx = await Sandbox.connect(id, connection(c));
        const size = () => ({
          cols: process.stdout.columns || 80,
          rows: process.stdout.rows || 24,
        });
        const ptyId =
          opts.attach ??
          (
            await sbx.pty.create({
              ...size(),
              cmd,
              args: cmd ? args : undefined,
              env: nonEmpty(opts.env),
              cwd: opts.cwd,
              user: opts.user,
            })
          ).pty_id;
        io.exitCode = await runTerminal((o) => sbx.pty.connect(ptyId, o), size);
      },
    );
}

/** Wires this terminal to the session until it exits; returns its exit code. */
async function runTerminal(
  connect: (o: Parameters<Sandbox['pty']['connect']>[1]) => Promise<PtyConnection>,
  size: () => { cols: number; rows: number },
): Promise<number> {
  const stdin = process.stdin;
  const raw = stdin.isTTY === true;
  let current: PtyConnection | null = null;
  let exitCode: number | null = null;
  let offset: number | undefined; // output seen so far: a reconnect replays only the rest
  /** Keystrokes typed while reconnecting, sent once connected again. */
  const pending: Buffer[] = [];
  const onInput = (chunk: Buffer) => (current ? current.write(chunk) : pending.push(chunk));
  const onResize = () => {
    const { cols, rows } = size();
    current?.resize(cols, rows);
  };
  if (raw) stdin.setRawMode(true);
  stdin.on('data', onInput);
  process.stdout.on('resize', onResize);
  try {
    for (let failures = 0; exitCode === null;) {
      const conn = await connect({
        since: offset,
        onData: (data) => process.stdout.write(data),
        onExit: (e) => (exitCode = e.exitCode),
        onError: (e) => process.stderr.write(`\r\nwarren: ${e.code}: ${e.message}\r\n`),
      });
      current = conn;
      onResize(); // the size may have changed while away
      for (const chunk of pending.splice(0)) conn.write(chunk);
      const closed = await conn.closed;
      current = null;
      offset = conn.offset;
      if (exitCode !== null) break;
      if (!closed.reconnect || ++failures > MAX_RECONNECTS) {
        process.stderr.write(
          `\r\nwarren: terminal connection closed (${closed.code} ${closed.reason})\r\n`,
        );
        return 1;
      }
      await delay(200);
    }
    return exitCode ?? 1;
  } finally {
    stdin.off('data', onInput);
    process.stdout.off('resize', onResize);
    if (raw) stdin.setRawMode(false);
    stdin.pause();
  }
}

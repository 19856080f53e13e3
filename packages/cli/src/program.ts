/**
 * The command tree. Each command lives in its own file under commands/ and
 * registers itself on its noun; this file only wires them and handles errors.
 */
import { createRequire } from 'node:module';
import { Command, CommanderError } from 'commander';
import { register as sandboxCode } from './commands/sandbox/code';
import { register as sandboxCp } from './commands/sandbox/cp';
import { register as sandboxCreate } from './commands/sandbox/create';
import { register as sandboxExec } from './commands/sandbox/exec';
import { register as sandboxKill } from './commands/sandbox/kill';
import { register as sandboxLs } from './commands/sandbox/ls';
import { register as sandboxNetwork } from './commands/sandbox/network';
import { register as sandboxShell } from './commands/sandbox/shell';
import { register as templateBuild } from './commands/template/build';
import { register as templateGet } from './commands/template/get';
import { register as templateLs } from './commands/template/ls';
import { register as templateRebuild } from './commands/template/rebuild';
import { register as templateRm } from './commands/template/rm';
import { register as up } from './commands/platform/up';
import { register as usage } from './commands/platform/usage';
import { register as mcp } from './commands/platform/mcp';
import { register as agent } from './commands/platform/agent';
import { register as cluster } from './commands/platform/cluster';
import { register as hosts } from './commands/host/hosts';
import { register as volumeCreate } from './commands/volume/create';
import { register as volumeLs } from './commands/volume/ls';
import { register as volumeRm } from './commands/volume/rm';
import { register as keyCreate } from './commands/key/create';
import { register as keyLs } from './commands/key/ls';
import { register as keyRevoke } from './commands/key/revoke';
import { register as auditLs } from './commands/audit/ls';
import { register as quotas } from './commands/quota/quotas';
import { register as dbHistory } from './commands/db/history';
import { register as dbManage } from './commands/db/manage';
import { register as dbPsql } from './commands/db/psql';
import { formatError, type Io } from './io';

const { version } = createRequire(import.meta.url)('../package.json') as { version: string };

export function createProgram(io: Io): Command {
  const program = new Command('warren')
    .description('Warren: self-hosted gVisor sandboxes for AI agents')
    .version(version)
    .option('--api <url>', 'API base URL (default: $WARREN_API or http://127.0.0.1:8080)')
    .option('--token <token>', 'API token (default: $WARREN_API_KEY or $WARREN_HOME/admin-token)')
    // Throw instead of calling process.exit, and write through io; subcommands
    // created below inherit both settings.
    .exitOverride()
    .configureOutput({
      writeOut: (s) => void io.stdout.write(s),
      writeErr: (s) => void io.stderr.write(s),
    });

  const sandbox = program.command('sandbox').alias('sbx').description('manage sandboxes');
  sandboxCreate(sandbox, io);
  sandboxLs(sandbox, io);
  sandboxExec(sandbox, io);
  sandboxCode(sandbox, io);
  sandboxKill(sandbox, io);
  sandboxCp(sandbox);
  sandboxNetwork(sandbox, io);
  sandboxShell(sandbox, io);

  const template = program.command('template').description('build and manage templates');
  templateLs(template, io);
  templateGet(template, io);
  templateBuild(template, io);
  templateRebuild(template, io);
  templateRm(template, io);

  const volume = program.command('volume').alias('vol').description('manage volumes');
  volumeCreate(volume, io);
  volumeLs(volume, io);
  volumeRm(volume, io);
  const key = program.command('key').description('manage API keys');
  keyCreate(key, io);
  keyLs(key, io);
  keyRevoke(key, io);
  quotas(program, io);
  const db = program.command('db').alias('database').description('manage PostgreSQL databases');
  dbManage(db, io);
  dbPsql(db, io);
  dbHistory(db, io);
  auditLs(program, io);

  up(program, io);
  usage(program, io);
  mcp(program, version);
  agent(program, io);
  cluster(program, io);
  hosts(program, io);
  return program;
}

/** Runs the CLI on `argv` (without node and script) and returns the exit code. */
export async function runCli(argv: string[], io: Io): Promise<number> {
  try {
    await createProgram(io).parseAsync(argv, { from: 'user' });
    return io.exitCode;
  } catch (err) {
    // Usage errors and --help were already printed by commander.
    if (err instanceof CommanderError) return err.exitCode;
    io.stderr.write(`${formatError(err)}\n`);
    return 1;
  }
}

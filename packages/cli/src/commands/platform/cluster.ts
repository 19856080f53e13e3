/**
 * `warren cluster up --agents N`: a control plane, N host agents and a
 * private PostgreSQL on this machine, until SIGINT/SIGTERM (docs/multi-host.md).
 */
import { InvalidArgumentError, type Command } from 'commander';
import type { Io } from '../../io';

function count(text: string): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 0 || n > 16) throw new InvalidArgumentError('0 to 16');
  return n;
}

export function register(program: Command, io: Io): void {
  const cluster = program.command('cluster').description('several hosts on this machine');
  cluster
    .command('up')
    .description('start PostgreSQL, a control plane and N host agents here (Ctrl-C to stop)')
    .option('--agents <n>', "host agents besides the control plane's own", count, 2)
    .action(async (opts: { agents: number }) => {
      const { startCluster } = await import('@warren/server');
      const c = await startCluster({
        agents: opts.agents,
        onProgress: (line) => io.stderr.write(`[warren cluster] ${line}\n`),
      });
      io.stdout.write(
        `Warren cluster is up: ${c.hostIds.length + 1} hosts (host_local${c.hostIds.map((h) => `, ${h}`).join('')}).\n` +
          `  API:        ${c.platform.url}\n` +
          `  token file: ${c.platform.tokenFile}\n` +
          `  store:      ${c.postgres.url}\n` +
          `Use it with WARREN_API=${c.platform.url} WARREN_API_KEY=$(cat ${c.platform.tokenFile}).\n`,
      );
      await new Promise<void>((resolve) => {
        process.once('SIGINT', resolve).once('SIGTERM', resolve);
      });
      io.stderr.write('shutting down the cluster\n');
      await c.close();
      process.exit(0);
    });
}

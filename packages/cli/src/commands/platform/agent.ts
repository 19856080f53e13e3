/**
 * `warren agent`: runs a host agent in this process for a control plane
 * elsewhere, until SIGINT/SIGTERM (docs/multi-host.md). The server package is
 * imported on demand so that no other command loads it.
 */
import type { Command } from 'commander';
import type { Io } from '../../io';

function listenOf(text: string): { host: string; port: number } {
  const i = text.lastIndexOf(':');
  const port = Number(text.slice(i + 1));
  if (i < 0 || !Number.isInteger(port) || port < 0 || port > 65535)
    throw new Error(`--listen wants host:port, not ${text}`);
  return { host: text.slice(0, i), port };
}

export function register(program: Command, io: Io): void {
  program
    .command('agent')
    .description('run a host agent that joins a control plane (Ctrl-C to stop)')
    .requiredOption('--control-plane <url>', "the control plane's API URL")
    .option('--join-token <token>', 'a token from `warren host token` (first start only)')
    .option('--listen <host:port>', 'where its HostApi listens (default 127.0.0.1:0)')
    .option('--advertise <url>', 'the URL the control plane reaches it at')
    .option('--host-id <id>', 'an id to join as (default: a new one)')
    .option('--tls-cert <file>', 'serve the HostApi over HTTPS with this PEM certificate')
    .option('--tls-key <file>', 'the PEM key of --tls-cert')
    .action(
      async (opts: {
        controlPlane: string;
        joinToken?: string;
        listen?: string;
        advertise?: string;
        hostId?: string;
        tlsCert?: string;
        tlsKey?: string;
      }) => {
        if (!opts.tlsCert !== !opts.tlsKey) throw new Error('--tls-cert and --tls-key go together');
        const { startAgent } = await import('@warren/server');
        const agent = await startAgent({
          controlPlane: opts.controlPlane.replace(/\/+$/, ''),
          joinToken: opts.joinToken,
          listen: opts.listen ? listenOf(opts.listen) : undefined,
          advertise: opts.advertise,
          hostId: opts.hostId,
          tls: opts.tlsCert ? { cert: opts.tlsCert, key: opts.tlsKey! } : undefined,
          log: (line) => io.stderr.write(`[warren agent] ${line}\n`),
        });
        io.stdout.write(`host ${agent.hostId} at ${agent.url}\n`);
        await new Promise<void>((resolve) => {
          process.once('SIGINT', resolve).once('SIGTERM', resolve);
        });
        io.stderr.write('shutting down (the sandboxes stay for the next start)\n');
        await agent.close();
        process.exit(0);
      },
    );
}

/**
 * `warren up`: runs the whole platform in this process until SIGINT/SIGTERM.
 * The server is imported on demand so that no other command loads it.
 */
import type { Command } from 'commander';
import type { Io } from '../../io';

export function register(program: Command, io: Io): void {
  program
    .command('up')
    .description('start the Warren platform in this process (Ctrl-C to stop)')
    .action(async () => {
      const { startPlatform } = await import('@warren/server');
      const platform = await startPlatform();
      io.stdout.write(
        `Warren is up.\n` +
          `  API:        ${platform.url}\n` +
          `  token:      ${platform.adminToken}\n` +
          `  token file: ${platform.tokenFile}\n` +
          `Other warren commands on this machine find the token file on their own.\n`,
      );
      const signal = await nextSignal();
      io.stderr.write(`${signal}: shutting down (again to force)\n`);
      await platform.close();
    });
}

/** Resolves on the first SIGINT/SIGTERM; a second one exits at once. */
function nextSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    const onSignal = (signal: NodeJS.Signals) => {
      process.off('SIGINT', onSignal).off('SIGTERM', onSignal);
      process.once('SIGINT', () => process.exit(130)).once('SIGTERM', () => process.exit(143));
      resolve(signal);
    };
    process.on('SIGINT', onSignal).on('SIGTERM', onSignal);
  });
}

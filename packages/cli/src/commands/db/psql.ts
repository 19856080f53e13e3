/**
 * `warren db psql <id>`: opens psql on a database over TLS, verifying the
 * server against the install's CA (fetched from the API into a temporary file).
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Database } from '@warren/sdk';
import type { Command } from 'commander';
import { connection } from '../../connection';
import type { Io } from '../../io';

export function register(db: Command, io: Io): void {
  db.command('psql')
    .description('open psql on a database (sslmode=verify-full with the install CA)')
    .argument('<id>')
    .option('--pooled', 'through PgBouncer (transaction mode)')
    .option('-c, --command <sql>', 'run one command and exit')
    .action(async (id: string, o: { pooled?: boolean; command?: string }, cmd: Command) => {
      const conn = connection(cmd);
      const info = await Database.get(id, conn);
      const dir = await mkdtemp(join(tmpdir(), 'warren-psql-'));
      try {
        const ca = join(dir, 'ca.pem');
        await writeFile(ca, await Database.caCertificate(conn));
        const url = `${o.pooled ? info.pooled_url : info.connection_url}?sslmode=verify-full&sslrootcert=${encodeURIComponent(ca)}`;
        const args = [url, ...(o.command ? ['-c', o.command] : [])];
        io.exitCode = await new Promise<number>((resolve, reject) => {
          const child = spawn(process.env.WARREN_PSQL ?? 'psql', args, { stdio: 'inherit' });
          child.on('error', (err) =>
            reject(new Error(`could not run psql (${err.message}): install postgresql-client`)),
          );
          child.on('exit', (code) => resolve(code ?? 1));
        });
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    });
}

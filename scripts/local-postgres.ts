/**
 * A private PostgreSQL cluster to try the PostgreSQL store on one machine:
 * started from the host's server binaries (scripts/setup.sh installs them),
 * its URL printed, stopped and removed on Ctrl-C.
 *
 *   node --import tsx scripts/local-postgres.ts            # Unix socket only
 *   node --import tsx scripts/local-postgres.ts --tcp 5440 # also 127.0.0.1:5440, with a password
 */
import { startLocalPostgres } from '../packages/server/src/store/pg-local';

const tcp = process.argv.indexOf('--tcp');
const port = tcp > 0 ? Number(process.argv[tcp + 1]) : undefined;
if (tcp > 0 && !Number.isInteger(port)) {
  console.error('usage: local-postgres.ts [--tcp <port>]');
  process.exit(2);
}
try {
  const pg = await startLocalPostgres(tcp > 0 ? { tcpHost: '127.0.0.1', port } : {});
  console.log(`PostgreSQL is up in ${pg.dir} (removed on Ctrl-C).`);
  console.log(`  WARREN_DATABASE_URL='${pg.url}'`);
  // Signal handlers alone do not keep the process (and with it the cluster) alive.
  const alive = setInterval(() => undefined, 1 << 30);
  const stop = () => {
    process.off('SIGINT', stop).off('SIGTERM', stop);
    clearInterval(alive);
    void pg.stop().then(() => console.log('stopped and removed'));
  };
  process.on('SIGINT', stop).on('SIGTERM', stop);
} catch (err) {
  console.error(`error: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
}

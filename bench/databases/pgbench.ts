/**
 * Throughput: pgbench (scale 10) through the TLS front door, through the
 * pooled URL (front door + PgBouncer in transaction mode), and inside the
 * sandbox over the Unix socket, all as the app role on the same database.
 */
import type { Database } from '@warren/protocol';
import { PG_BIN, SOCKET_DIR } from '../../packages/server/src/databases/postgres/layout';
import { timed } from '../stats';
import { baseBackupDone, create, drop, execFileP, type DbBench } from './common';

const SECONDS = Number(process.env.BENCH_PGBENCH_SECONDS ?? 10);
const TPCB_SECONDS = Number(process.env.BENCH_PGBENCH_TPCB_SECONDS ?? 8);
const SCALE = 10;
const CLIENTS = ['-c', '8', '-j', '2'];

export interface TpsResult {
  mode: string;
  path: string;
  tps: number;
  /** TPS of this path / TPS in the sandbox, same mode. */
  ratio: number;
}

/** pgbench's TPS; 0 when no transaction finished in the time (it prints no tps line then). */
const tpsOf = (out: string) => {
  const m = /^tps = ([\d.]+)/m.exec(out);
  if (m) return Number(m[1]);
  if (/^number of transactions actually processed: 0\b/m.test(out)) return 0;
  throw new Error(`no tps in pgbench output: ${out.slice(-500)}`);
};

/** The host's pgbench on a URL (sslmode=require, password in PGPASSWORD). */
async function hostPgbench(url: string, args: string[], seconds: number): Promise<number> {
  const u = new URL(url);
  const { stdout } = await execFileP(
    'pgbench',
    ['-n', ...CLIENTS, '-T', String(seconds), ...args],
    {
      timeout: (seconds + 60) * 1000,
      env: {
        ...process.env,
        PGHOST: u.hostname,
        PGPORT: u.port,
        PGUSER: decodeURIComponent(u.username),
        PGPASSWORD: decodeURIComponent(u.password),
        PGDATABASE: u.pathname.slice(1),
        PGSSLMODE: 'require',
        PGCONNECT_TIMEOUT: '30',
      },
    },
  );
  return tpsOf(stdout);
}

/** PostgreSQL 17's pgbench inside the sandbox, as the postgres user, over the Unix socket. */
async function guestPgbench(
  b: DbBench,
  db: Database,
  args: string,
  seconds: number,
): Promise<number> {
  const pg = b.p.context.databases.service.provisioner.postgres(db.sandbox_id);
  const line = `${PG_BIN}/pgbench -n ${CLIENTS.join(' ')} -T ${seconds} ${args} -h ${SOCKET_DIR} -U app app`;
  return tpsOf(await pg.shell(line, { timeoutMs: (seconds + 60) * 1000 }));
}

export async function pgbenchRows(b: DbBench): Promise<{ results: TpsResult[]; title: string }> {
  const db = await create(b, { label: 'bench-pgbench', cpu: 2, disk_mb: 2048 });
  try {
    await baseBackupDone(b.p, db.id);
    const pg = b.p.context.databases.service.provisioner.postgres(db.sandbox_id);
    // As the app role (trust on the Unix socket), data generated on the server.
    const [initMs] = await timed(() =>
      pg.shell(`${PG_BIN}/pgbench -i -s ${SCALE} -I dtGvp -q -h ${SOCKET_DIR} -U app app`, {
        timeoutMs: 600_000,
      }),
    );
    b.notes.push(
      `pgbench -i -s ${SCALE} (server-side generate) in the sandbox: ${(initMs / 1000).toFixed(1)} s`,
    );

    const results: TpsResult[] = [];
    const modes: Array<[string, string[], number]> = [
      ['select-only (-S)', ['-S'], SECONDS],
      ['TPC-B-like (default)', [], TPCB_SECONDS],
    ];
    for (const [mode, args, seconds] of modes) {
      if (seconds <= 0) continue;
      // Each path twice, in the order A B C C B A, and the mean of the two: a
      // checkpoint or writeback of what an earlier run wrote (TPC-B-like) and a
      // host that gets busier or quieter fall on every path alike.
      const paths = {
        inside: () => guestPgbench(b, db, args.join(' '), seconds),
        front: () => hostPgbench(db.connection_url, args, seconds),
        pooled: () => hostPgbench(db.pooled_url, args, seconds),
      };
      const order = ['inside', 'front', 'pooled'] as const;
      const sums = { inside: 0, front: 0, pooled: 0 };
      for (const path of [...order, ...[...order].reverse()]) sums[path] += await paths[path]();
      const [inside, front, pooled] = [sums.inside / 2, sums.front / 2, sums.pooled / 2];
      results.push(
        { mode, path: 'in the sandbox (Unix socket, pgbench 17)', tps: inside, ratio: 1 },
        { mode, path: 'front door (TLS, host pgbench)', tps: front, ratio: front / inside },
        { mode, path: 'pooled URL (TLS + PgBouncer)', tps: pooled, ratio: pooled / inside },
      );
    }
    const title = `pgbench, scale ${SCALE}, ${CLIENTS.join(' ')}, -S for ${SECONDS} s and TPC-B for ${TPCB_SECONDS} s, each path twice (A B C C B A, mean); database of 2 vCPU`;
    return { results, title };
  } finally {
    await drop(b, db.id);
  }
}

export function printTps(title: string, results: TpsResult[]): void {
  const header = ['mode', 'path', 'TPS', 'vs in-sandbox'];
  const lines = results.map((r) => [r.mode, r.path, r.tps.toFixed(0), `${r.ratio.toFixed(2)}x`]);
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
  const show = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i]!)).join('  ');
  console.log(`\n${title}\n`);
  console.log(show(header));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const l of lines) console.log(show(l));
}

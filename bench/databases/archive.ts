/**
 * Continuous archiving: a WAL segment switched in a database with a commit in
 * it (pg_switch_wal) until the archive has it (copied into the outbox and
 * fsynced in the sandbox, read by the host from its mount of the volume and
 * stored), beside `cp` and `sync` of a 16 MiB file on the host: what an
 * archive_command into a local directory costs without a sandbox.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { timed, type Row } from '../stats';
import { archiveNow, baseBackupDone, create, drop, execFileP, sql, type DbBench } from './common';

const RUNS = Number(process.env.BENCH_DB_ARCHIVES ?? 8);

export async function archiveRow(b: DbBench): Promise<Row> {
  const row: Row = {
    name: 'archive a WAL segment (switch -> in the archive)',
    unit: 'ms',
    warren: [],
    direct: [],
    directName: 'cp + sync 16 MiB (host)',
  };
  const db = await create(b, { label: 'bench-archive' });
  const dir = mkdtempSync('/tmp/wdb-archive-');
  try {
    await baseBackupDone(b.p, db.id);
    await sql(b, db, 'CREATE TABLE a (n int)');
    writeFileSync(join(dir, 'segment'), Buffer.alloc(16 << 20, 1));
    for (let i = 0; i < RUNS; i++) {
      await sql(b, db, `INSERT INTO a VALUES (${i})`);
      row.warren.push((await timed(() => archiveNow(b, db)))[0]);
      const to = join(dir, `copy-${i}`);
      row.direct.push(
        (
          await timed(() =>
            execFileP('sh', ['-c', `cp "$1" "$2" && sync "$2"`, 'sh', join(dir, 'segment'), to]),
          )
        )[0],
      );
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
    await drop(b, db.id);
  }
  return row;
}

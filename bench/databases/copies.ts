/**
 * Copies of a database with data in it: branch time at ~50 MB and ~300 MB
 * (beside `cp --sparse=always` of the same volume image on the host), and a
 * restore to the latest archived WAL of the ~300 MB database (beside `tar -xzf`
 * of the same base backup on the host).
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { Database } from '@warren/protocol';
import { median, timed, type Row } from '../stats';
import {
  archiveNow,
  baseBackupDone,
  create,
  created,
  drop,
  execFileP,
  mib,
  progress,
  selectOne,
  sql,
  volumeDir,
  type DbBench,
} from './common';

const BRANCHES = Number(process.env.BENCH_DB_BRANCHES ?? 3);
const RESTORES = Number(process.env.BENCH_DB_RESTORES ?? 3);
const SMALL_MB = 50;
const LARGE_MB = Number(process.env.BENCH_DB_LARGE_MB ?? 300);

/** 960 characters of random hex a row: about 8 rows in each 8 KiB page, compressible like text. */
const PAD = Array.from({ length: 30 }, () => 'md5(random()::text)').join(' || ');
const CHUNK_ROWS = 50_000;

/** Inserts wide rows until the database `app` holds about `mb` MiB; returns its size in bytes. */
async function fillTo(b: DbBench, db: Database, mb: number): Promise<number> {
  await sql(b, db, 'CREATE TABLE IF NOT EXISTS wide (id bigint, pad text)');
  const size = async () => Number((await sql(b, db, "SELECT pg_database_size('app')")).trim());
  let next = Number((await sql(b, db, 'SELECT coalesce(max(id), 0) + 1 FROM wide')).trim());
  for (let bytes = await size(); bytes < mb * 1048576; bytes = await size()) {
    const rows = Math.min(CHUNK_ROWS, Math.ceil((mb * 1048576 - bytes) / 1000));
    const last = next + rows - 1;
    await sql(b, db, `INSERT INTO wide SELECT i, ${PAD} FROM generate_series(${next}, ${last}) i`);
    next = last + 1;
  }
  // A database at rest: vacuumed (or autovacuum's first pass over the new rows
  // runs during the branches: a busy parent, see docs/limits.md), its dirty
  // pages written, its WAL archived (not replayed by every copy).
  await sql(b, db, 'VACUUM (ANALYZE) wide', 600_000);
  await sql(b, db, 'CHECKPOINT');
  await archiveNow(b, db);
  return size();
}

async function usedOnVolume(b: DbBench, db: Database): Promise<number> {
  const rec = await b.p.context.databases.service.queries.byId(db.id);
  return b.p.host.volumes.usedBytes(rec!.volume_id);
}

/** Branches of `db` until their first query, beside cp of its volume image. */
async function branchRow(b: DbBench, db: Database, name: string): Promise<Row> {
  const row: Row = {
    name,
    unit: 'ms',
    warren: [],
    direct: [],
    directName: 'cp --sparse=always of the volume image',
  };
  const image = join(await volumeDir(b, db.id), 'volume.img');
  for (let i = 0; i < BRANCHES; i++) {
    const [w, br] = await timed(async () => {
      const br = await created(b, `/v1/databases/${db.id}/branches`, {
        label: `bench-branch-${i}`,
      });
      await selectOne(b.p, br.connection_url);
      return br;
    });
    row.warren.push(w);
    await drop(b, br.id);
    await b.p.host.settle();
  }
  // After the branches: the copies' writeback and the discards of their removal
  // (the host's disk is mounted with discard) would land on a branch's fsyncs.
  for (let i = 0; i < BRANCHES; i++) {
    const to = join(b.direct.direct.dir, `branch-${i}.img`);
    row.direct.push((await timed(() => execFileP('cp', ['--sparse=always', image, to])))[0]);
    await execFileP('sync', [to]);
    rmSync(to, { force: true });
  }
  return row;
}

/** Pushes each row into `rows` as soon as it is measured. */
export async function copyRows(b: DbBench, rows: Row[]): Promise<void> {
  const db = await create(b, { label: 'bench-copies', disk_mb: 2048 });
  try {
    await baseBackupDone(b.p, db.id);
    const sizes: Array<[number, number, Row]> = [];
    for (const mb of [SMALL_MB, LARGE_MB]) {
      progress(`filling ${db.id} to ${mb} MiB`);
      const [fillMs, bytes] = await timed(() => fillTo(b, db, mb));
      const used = await usedOnVolume(b, db);
      const row = await branchRow(
        b,
        db,
        `branch -> first query (${mib(bytes).toFixed(0)} MiB db, ${mib(used).toFixed(0)} MiB on volume)`,
      );
      rows.push(row);
      sizes.push([mib(used), bytes, row]);
      b.notes.push(
        `filled to ${mib(bytes).toFixed(0)} MiB (pg_database_size), ${mib(used).toFixed(0)} MiB used on the volume, in ${(fillMs / 1000).toFixed(1)} s`,
      );
    }
    const [[usedS, , small], [usedL, , large]] = sizes as [(typeof sizes)[0], (typeof sizes)[0]];
    const slope = (xs: (r: Row) => number[]) =>
      ((median(xs(large)) - median(xs(small))) / (usedL - usedS)).toFixed(1);
    b.notes.push(
      `branch time growth from ${usedS.toFixed(0)} to ${usedL.toFixed(0)} MiB on the volume: warren ${slope((r) => r.warren)} ms/MiB, cp ${slope((r) => r.direct)} ms/MiB`,
    );
    rows.push(await restoreRow(b, db));
  } finally {
    await drop(b, db.id);
  }
}

/** Restore to latest of `db` from a base backup taken now, beside tar -xzf of that backup. */
async function restoreRow(b: DbBench, db: Database): Promise<Row> {
  const svc = b.p.context.databases.service;
  progress(`base backup of ${db.id}, then restores`);
  const [backupMs] = await timed(async () =>
    svc.archiver.baseBackup((await svc.queries.byId(db.id))!),
  );
  const backup = (await svc.queries.backups(db.id)).at(-1)!;
  const tar = join(b.p.home, 'archive', backup.key);
  const tarBytes = statSync(tar).size;

  const row: Row = {
    name: 'restore to latest -> first query',
    unit: 'ms',
    warren: [],
    direct: [],
    directName: 'tar -xzf of the same base backup on the host',
  };
  let extracted = 0;
  for (let i = 0; i < RESTORES; i++) {
    // The restore archives the source's current WAL first and gives that 30 s: start caught up.
    await archiveNow(b, db);
    const [w, r] = await timed(async () => {
      const r = await created(b, `/v1/databases/${db.id}/restore`, { label: `bench-restore-${i}` });
      await selectOne(b.p, r.connection_url);
      return r;
    });
    row.warren.push(w);
    if (i === 0) {
      const [src, dst] = await Promise.all(
        [db, r].map(async (d) => (await sql(b, d, 'SELECT count(*) FROM wide')).trim()),
      );
      if (src !== dst) throw new Error(`restore has ${dst} rows of ${src}`);
    }
    await drop(b, r.id);
    await b.p.host.settle();
    const dir = mkdtempSync(join(b.direct.direct.dir, 'untar-'));
    row.direct.push((await timed(() => execFileP('tar', ['-xzf', tar, '-C', dir])))[0]);
    extracted = Number((await execFileP('du', ['-sb', dir])).stdout.split('\t')[0]);
    rmSync(dir, { recursive: true, force: true });
  }
  row.name = `restore to latest -> first query (${mib(extracted).toFixed(0)} MiB)`;
  const gib = extracted / 1024 ** 3;
  const perGib = (xs: number[]) => (median(xs) / 1000 / gib).toFixed(1);
  b.notes.push(
    `base backup (pg_basebackup -Ft -z in the sandbox, into the archive): ${(backupMs / 1000).toFixed(1)} s, ${mib(tarBytes).toFixed(0)} MiB gzipped, ${mib(extracted).toFixed(0)} MiB unpacked`,
    `restore per GiB of data directory: warren ${perGib(row.warren)} s/GiB, tar -xzf ${perGib(row.direct)} s/GiB`,
  );
  return row;
}

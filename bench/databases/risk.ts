/**
 * Data at risk when the host loses a database's disk: a writer commits rows
 * one at a time through the front door; after a while the volume is deleted
 * and the sandbox killed, the platform restores the database from its archive
 * (epoch 2), and the committed rows that did not come back are counted.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { setTimeout as delay } from 'node:timers/promises';
import pg from 'pg';
import { withClient } from '../../test/databases';
import { waitFor } from '../../test/wait';
import { baseBackupDone, create, drop, get, progress, volumeDir, type DbBench } from './common';

const ARCHIVE_TIMEOUT_SECONDS = 5;
const WRITE_SECONDS = Number(process.env.BENCH_DB_RISK_SECONDS ?? 12);

export async function riskNotes(b: DbBench): Promise<string[]> {
  const { p } = b;
  // The default archive_timeout is 60 s: too long for a benchmark; 5 s bounds the loss the same way.
  const db = await create(b, {
    label: 'bench-risk',
    archive_timeout_seconds: ARCHIVE_TIMEOUT_SECONDS,
  });
  try {
    await baseBackupDone(p, db.id);
    const client = new pg.Client({
      connectionString: db.connection_url,
      ssl: { ca: readFileSync(p.dbCaFile, 'utf8') },
    });
    client.on('error', () => undefined);
    await client.connect();
    await client.query('CREATE TABLE risk (id bigint PRIMARY KEY, at timestamptz DEFAULT now())');
    /** Acknowledged commits: id and when the client had the acknowledgement. */
    const acked: Array<{ id: number; at: number }> = [];
    let stop = false;
    const writer = (async () => {
      for (let id = 1; !stop; id++) {
        await client.query('INSERT INTO risk (id) VALUES ($1)', [id]);
        acked.push({ id, at: Date.now() });
      }
    })().catch(() => undefined);
    progress(`writing into ${db.id} for ${WRITE_SECONDS} s`);
    await delay(WRITE_SECONDS * 1000);

    const before = await get(p, db.id);
    // The disk goes first (so the watch cannot start the server again on it), then the server.
    const dir = await volumeDir(b, db.id);
    execFileSync('umount', ['-l', `${dir}/mnt`]);
    rmSync(dir, { recursive: true, force: true });
    await p.host.driver.kill(before.sandbox_id);
    const killedAt = Date.now();
    stop = true;
    await Promise.race([writer, delay(5000)]);
    void client.end().catch(() => undefined);

    progress(`${db.id}: volume deleted, sandbox killed; waiting for the restore`);
    const back = await waitFor(
      async () => {
        const d = await get(p, db.id);
        if (d.state === 'failed') throw new Error(`${db.id} failed to recover`);
        return d.state === 'ready' && d.archive.epoch === 2 ? d : null;
      },
      { what: `${db.id} restored from its archive`, timeoutMs: 300_000, intervalMs: 200 },
    );
    const recoveredMs = Date.now() - killedAt;
    // The table itself was made after the first base backup: it is only back if its WAL was archived.
    const r = await withClient(p, back.connection_url, async (c) => {
      const t = await c.query<{ t: boolean }>("SELECT to_regclass('public.risk') IS NOT NULL AS t");
      if (!t.rows[0]?.t) return null;
      const q = 'SELECT coalesce(max(id), 0) AS max, count(*) AS n FROM risk';
      return (await c.query<{ max: string; n: string }>(q)).rows[0]!;
    });
    const present = Number(r?.max ?? 0);
    const count = Number(r?.n ?? 0);
    const { items } = await p.json<{ items: Array<{ kind: string; message: string }> }>(
      `/v1/databases/${db.id}/events`,
    );
    const restored = items.find((e) => e.kind === 'restored')?.message ?? '';
    const committed = acked.length;
    const missing = acked.filter((a) => a.id > present).length;
    const lastKept = acked.find((a) => a.id === present);
    const lastAck = acked.at(-1);
    const span = lastKept && lastAck ? (lastAck.at - lastKept.at) / 1000 : NaN;
    const toKill = lastKept ? (killedAt - lastKept.at) / 1000 : NaN;
    const archivedAge = before.archive.last_archived_at
      ? ((killedAt - Date.parse(before.archive.last_archived_at)) / 1000).toFixed(1)
      : '-';
    const rate = committed / WRITE_SECONDS;
    return [
      `data at risk (archive_timeout_seconds ${ARCHIVE_TIMEOUT_SECONDS} at create, not the default 60, to fit the benchmark):`,
      `  a writer committed ${committed} rows (${rate.toFixed(0)}/s, one INSERT a transaction through the front door) for ${WRITE_SECONDS} s;`,
      `  last archived WAL at the kill: ${before.archive.last_archived_wal ?? 'none'}, archived ${archivedAge} s before it;`,
      `  volume deleted and sandbox killed -> ready again from the archive (epoch ${back.archive.epoch}) in ${(recoveredMs / 1000).toFixed(1)} s;`,
      `  the platform's event: ${restored}`,
      `  committed rows missing: ${missing} of ${committed} (${r ? `${count} rows back, ids 1..${present}` : 'the table itself is not back'}); ` +
        `the commits of the last ${toKill.toFixed(1)} s before the kill were lost (${span.toFixed(1)} s between the last row kept and the last acknowledged)`,
    ];
  } finally {
    await drop(b, db.id);
  }
}

/** Latency rows: create -> first query, and wake-on-connect -> first query after scale to zero. */
import { join } from 'node:path';
import { waitForState } from '../../test/databases';
import { timed, type Row } from '../stats';
import { baseBackupDone, create, drop, selectOne, type DbBench } from './common';

const CREATES = Number(process.env.BENCH_DB_CREATES ?? 5);
const WAKES = Number(process.env.BENCH_DB_WAKES ?? 5);

/** POST /v1/databases and SELECT 1 through the front door; one database at a time. */
async function createQuery(b: DbBench, label: string): Promise<[number, string]> {
  const [ms, db] = await timed(async () => {
    const db = await create(b, { label });
    await selectOne(b.p, db.connection_url);
    return db;
  });
  // The first base backup runs in the background after the 201: let it end before the next sample.
  await baseBackupDone(b.p, db.id);
  return [ms, db.id];
}

export async function createRow(b: DbBench): Promise<Row> {
  const row: Row = {
    name: 'database create -> first query',
    unit: 'ms',
    warren: [],
    direct: [],
    directName: 'runsc restore + exec (cp seed, pg_ctl start -w, psql select 1)',
  };
  // Warm both paths once (page cache of the template's root, runsc).
  const [, warm] = await createQuery(b, 'bench-warm');
  await drop(b, warm);
  await b.direct.destroy((await b.direct.createAndQuery())[1]);

  for (let i = 0; i < CREATES; i++) {
    const [w, id] = await createQuery(b, `bench-create-${i}`);
    row.warren.push(w);
    await drop(b, id);
    await b.p.host.settle();
    const [d, did] = await b.direct.createAndQuery();
    row.direct.push(d);
    await b.direct.destroy(did);
  }
  return row;
}

/**
 * A database with scale_to_zero_seconds 1 (the platform's watch runs every
 * 200 ms): once hibernated, connect + SELECT 1 through the front door, which
 * wakes it. Directly: a checkpoint of a container running Postgres, restored,
 * and a command run in it.
 */
export async function wakeRow(b: DbBench): Promise<Row> {
  const row: Row = {
    name: 'wake-on-connect -> first query',
    unit: 'ms',
    warren: [],
    direct: [],
    directName: 'runsc restore of a checkpoint of Postgres + exec true',
  };
  const db = await create(b, { label: 'bench-wake' });
  await baseBackupDone(b.p, db.id);
  await b.p.json(`/v1/databases/${db.id}`, {
    method: 'PATCH',
    json: { scale_to_zero_seconds: 1 },
  });
  let [, live] = await b.direct.createAndQuery();
  const failures: string[] = [];
  for (let i = 0; i < WAKES + failures.length && failures.length < WAKES; i++) {
    await waitForState(b.p, db.id, 'hibernated', 120_000);
    try {
      row.warren.push((await timed(() => selectOne(b.p, db.connection_url)))[0]);
    } catch (err) {
      // Counted and reported, not timed: the sample is taken again.
      failures.push((err as Error).message);
      continue;
    }

    const image = join(b.direct.direct.dir, `pg-hib-${i}`);
    await b.direct.hibernate(live, image);
    const [d, woken] = await b.direct.wakeAndExec(image);
    row.direct.push(d);
    live = woken;
  }
  await b.direct.destroy(live);
  const { items } = await b.p.json<{ items: Array<{ kind: string }> }>(
    `/v1/databases/${db.id}/events`,
  );
  const count = (k: string) => items.filter((e) => e.kind === k).length;
  b.notes.push(
    `wake-on-connect: ${count('hibernated')} hibernations and ${count('woken')} wakes in the events of ${db.id}`,
  );
  if (failures.length)
    b.notes.push(
      `wake-on-connect: ${failures.length} connection(s) to the hibernated database failed (not timed): ${[...new Set(failures)].join('; ')}`,
      `  events: ${items.map((e) => e.kind).join(', ')}`,
    );
  await drop(b, db.id);
  return row;
}

/** Snapshot rows: snapshot, restore from it, hibernate and wake, and fork-tree (issue 3). */
import { join } from 'node:path';
import type { Harness } from './harness';
import { timed, type Row } from './stats';

const LIFECYCLE_RUNS = Number(process.env.BENCH_LIFECYCLE_RUNS ?? 3);

/**
 * `sbx` is a running Warren sandbox, `dsbx` a container started directly.
 * The direct container is hibernated and woken under a new id: `live` is the
 * one running at the end.
 */
export async function snapshotRows(
  { p, direct, deleteAll, destroyDirect }: Harness,
  sbx: string,
  dsbx: string,
): Promise<{ rows: Row[]; fromSnap: Row; snapBytes: number; live: string }> {
  const snapRow: Row = {
    name: 'snapshot of a running sandbox',
    unit: 'ms',
    warren: [],
    direct: [],
    directName: 'runsc checkpoint --leave-running',
  };
  const fromSnap: Row = {
    name: 'snapshot -> first exec',
    unit: 'ms',
    warren: [],
    direct: [],
    directName: 'runsc restore of it + runsc exec true',
  };
  const hib: Row = {
    name: 'hibernate',
    unit: 'ms',
    warren: [],
    direct: [],
    directName: 'runsc checkpoint (stops it)',
  };
  const wake: Row = {
    name: 'wake -> first exec',
    unit: 'ms',
    warren: [],
    direct: [],
    directName: 'runsc restore + runsc exec true',
  };
  let snapBytes = 0;
  let live = dsbx;
  for (let i = 0; i < LIFECYCLE_RUNS; i++) {
    const [ws, snap] = await timed(() =>
      p.json<{ id: string; size_bytes: number }>(`/v1/sandboxes/${sbx}/snapshots`, {
        method: 'POST',
      }),
    );
    snapRow.warren.push(ws);
    snapBytes = snap.size_bytes;
    const [wr, child] = await timed(async () => {
      const c = await p.json<{ id: string }>('/v1/sandboxes', {
        method: 'POST',
        json: { from_snapshot: snap.id },
      });
      await p.json(`/v1/sandboxes/${c.id}/exec`, { method: 'POST', json: { cmd: 'true' } });
      return c.id;
    });
    fromSnap.warren.push(wr);
    await deleteAll([child]);
    await p.api(`/v1/snapshots/${snap.id}`, { method: 'DELETE' });
    hib.warren.push(
      (await timed(() => p.json(`/v1/sandboxes/${sbx}/hibernate`, { method: 'POST' })))[0],
    );
    wake.warren.push(
      (
        await timed(async () => {
          await p.json(`/v1/sandboxes/${sbx}/wake`, { method: 'POST' });
          await p.json(`/v1/sandboxes/${sbx}/exec`, { method: 'POST', json: { cmd: 'true' } });
        })
      )[0],
    );

    const image = join(direct.dir, `snap-${i}`);
    snapRow.direct.push(
      (
        await timed(() =>
          direct.runsc([
            'checkpoint',
            '--leave-running',
            '--compression=none',
            '--image-path',
            image,
            live,
          ]),
        )
      )[0],
    );
    const [dr, dchild] = await direct.restoreAndExec(p, image);
    fromSnap.direct.push(dr);
    await destroyDirect([dchild]);
    const hibImage = join(direct.dir, `hib-${i}`);
    hib.direct.push(
      (
        await timed(() =>
          direct.runsc(['checkpoint', '--compression=none', '--image-path', hibImage, live]),
        )
      )[0],
    );
    await destroyDirect([live]);
    const [dw, woken] = await direct.restoreAndExec(p, hibImage);
    wake.direct.push(dw);
    live = woken;
  }
  return { rows: [snapRow, fromSnap, hib, wake], fromSnap, snapBytes, live };
}

/** Fork-tree of 16 from `sbx`, beside 16 direct restores of a checkpoint of `live`. */
export async function forkRow(
  { p, direct, deleteAll, destroyDirect }: Harness,
  sbx: string,
  live: string,
): Promise<{ row: Row; parentPauseMs: number }> {
  const fork: Row = {
    name: 'fork-tree of 16 until all answer exec',
    unit: 'ms',
    warren: [],
    direct: [],
    directName: '16 x (runsc restore + exec) at once',
  };
  const [wf, tree] = await timed(async () => {
    const r = await p.json<{ parent_pause_ms: number; children: Array<{ id: string }> }>(
      `/v1/sandboxes/${sbx}/fork-tree`,
      { method: 'POST', json: { count: 16 } },
    );
    await Promise.all(
      r.children.map((c) =>
        p.json(`/v1/sandboxes/${c.id}/exec`, { method: 'POST', json: { cmd: 'true' } }),
      ),
    );
    return r;
  });
  fork.warren.push(wf);
  await deleteAll(tree.children.map((c) => c.id));
  const forkImage = join(direct.dir, 'fork');
  await direct.runsc([
    'checkpoint',
    '--leave-running',
    '--compression=none',
    '--image-path',
    forkImage,
    live,
  ]);
  const [df, dkids] = await timed(() =>
    Promise.all(Array.from({ length: 16 }, () => direct.restoreAndExec(p, forkImage))),
  );
  fork.direct.push(df);
  await destroyDirect(dkids.map((k) => k[1]));
  return { row: fork, parentPauseMs: tree.parent_pause_ms };
}

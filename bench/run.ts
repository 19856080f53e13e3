/**
 * `npm run bench`: Warren's operations through the REST API, each beside the
 * same work done directly with runsc in the same run. Median and p95 of
 * repeated runs; the ratio compares medians.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { GvisorDriver } from '../packages/host-agent/src/runtime/gvisor/driver';
import { startTestPlatform, RUNSC, type TestPlatform } from '../test/fixture';
import { printTable, type Row } from './stats';
import { previewRows } from './preview';
import { templateRows } from './templates';

const SEQUENTIAL = Number(process.env.BENCH_CREATES ?? 10);
const CONCURRENT = 8;
const EXECS = Number(process.env.BENCH_EXECS ?? 40);
const FILE_MB = 100;
const FILE_RUNS = Number(process.env.BENCH_FILE_RUNS ?? 3);
const LIFECYCLE_RUNS = Number(process.env.BENCH_LIFECYCLE_RUNS ?? 3);
const extra: string[] = [];
const fromSnapRatio: number[][] = [];

const now = () => performance.now();

async function timed<T>(fn: () => Promise<T>): Promise<[number, T]> {
  const t = now();
  const v = await fn();
  return [now() - t, v];
}

/** The same runsc, flags and template image that Warren uses, driven by hand. */
class Direct {
  private n = 0;
  readonly root: string;
  readonly driver: GvisorDriver;
  constructor(readonly dir: string) {
    this.root = join(dir, 'runsc');
    this.driver = new GvisorDriver({ binary: RUNSC, stateDir: this.root });
  }
  runsc(args: string[], input?: Readable): Promise<void> {
    return new Promise((resolve, reject) => {
      const child = spawn(RUNSC, ['--root', this.root, '--network=none', ...args], {
        stdio: [input ? 'pipe' : 'ignore', 'ignore', 'pipe'],
      });
      if (input && child.stdin) input.pipe(child.stdin);
      let err = '';
      child.stderr?.on('data', (d) => (err += d));
      child.once('close', (code) =>
        code === 0 ? resolve() : reject(new Error(`runsc ${args[0]}: ${err.slice(-300)}`)),
      );
    });
  }
  /** runsc restore of the template image, then runsc exec of `true`: a command has run. */
  async restoreAndExec(
    p: TestPlatform,
    image?: string,
    template = 'base',
  ): Promise<[number, string]> {
    const t = await p.context.host.templates.get(template);
    const guest = join(p.context.config.templatesDir, '.guest', t.guest_key);
    const id = `direct-${process.pid}-${this.n++}`;
    const workDir = join(this.dir, id);
    mkdirSync(join(workDir, 'chan'), { recursive: true });
    // The template image has a file-backed overlay and the volumes mount: a restore needs both.
    mkdirSync(join(workDir, 'overlay'));
    mkdirSync(join(workDir, 'volumes'));
    const spec = {
      id,
      rootfs: t.rootfs,
      guestDir: guest,
      channelDir: join(workDir, 'chan'),
      workDir,
      cpu: 1,
      memoryMb: 512,
      hostname: id,
      env: {},
      filestoreDir: join(workDir, 'overlay'),
      volumesDir: join(workDir, 'volumes'),
    };
    const started = now();
    await this.driver.restore(spec, image ?? t.snapshot);
    await this.runsc(['exec', id, 'true']);
    return [now() - started, id];
  }
}

function bytes(mb: number): Readable {
  const chunk = Buffer.alloc(1024 * 1024, 7);
  return Readable.from(
    (function* () {
      for (let i = 0; i < mb; i++) yield chunk;
    })(),
  );
}

async function main(): Promise<void> {
  const p = await startTestPlatform({ memoryBudgetMb: 16_000 });
  const direct = new Direct(mkdtempSync('/tmp/wb-'));
  const rows: Row[] = [];
  const cleanup: string[] = [];
  try {
    const createExec = async () => {
      const t = now();
      const sbx = await p.json<{ id: string }>('/v1/sandboxes', {
        method: 'POST',
        json: { template: 'base' },
      });
      await p.json(`/v1/sandboxes/${sbx.id}/exec`, { method: 'POST', json: { cmd: 'true' } });
      return [now() - t, sbx.id] as [number, string];
    };
    const deleteAll = async (ids: string[]) => {
      for (const id of ids) await p.api(`/v1/sandboxes/${id}`, { method: 'DELETE' });
      await p.context.host.settle();
    };
    const destroyDirect = async (ids: string[]) => {
      for (const id of ids) await direct.driver.destroy(id);
    };

    // Warm both paths once (page cache, runsc binary).
    await deleteAll([(await createExec())[1]]);
    await destroyDirect([(await direct.restoreAndExec(p))[1]]);

    const seq: Row = {
      name: 'create -> first exec (sequential)',
      unit: 'ms',
      warren: [],
      direct: [],
      directName: 'runsc restore + runsc exec true',
    };
    for (let i = 0; i < SEQUENTIAL; i++) {
      const [w, id] = await createExec();
      seq.warren.push(w);
      await deleteAll([id]);
      const [d, did] = await direct.restoreAndExec(p);
      seq.direct.push(d);
      await destroyDirect([did]);
    }
    rows.push(seq);

    const conc: Row = {
      name: `create -> first exec (${CONCURRENT} concurrent)`,
      unit: 'ms',
      warren: [],
      direct: [],
      directName: `${CONCURRENT} x (runsc restore + exec) at once`,
    };
    for (let round = 0; round < 2; round++) {
      const w = await Promise.all(Array.from({ length: CONCURRENT }, createExec));
      conc.warren.push(...w.map((x) => x[0]));
      await deleteAll(w.map((x) => x[1]));
      const d = await Promise.all(
        Array.from({ length: CONCURRENT }, () => direct.restoreAndExec(p)),
      );
      conc.direct.push(...d.map((x) => x[0]));
      await destroyDirect(d.map((x) => x[1]));
    }
    rows.push(conc);

    const [, sbx] = await createExec();
    cleanup.push(sbx);
    const [, dsbx] = await direct.restoreAndExec(p);
    const execRow: Row = {
      name: 'exec round trip of `true`',
      unit: 'ms',
      warren: [],
      direct: [],
      directName: 'runsc exec true',
    };
    for (let i = 0; i < EXECS; i++) {
      execRow.warren.push(
        (
          await timed(() =>
            p.json(`/v1/sandboxes/${sbx}/exec`, { method: 'POST', json: { cmd: 'true' } }),
          )
        )[0],
      );
      execRow.direct.push((await timed(() => direct.runsc(['exec', dsbx, 'true'])))[0]);
    }
    rows.push(execRow);

    const up: Row = {
      name: `${FILE_MB} MB upload`,
      unit: 'ms',
      warren: [],
      direct: [],
      directName: 'runsc exec -i sh -c "cat > file"',
    };
    const down: Row = {
      name: `${FILE_MB} MB download`,
      unit: 'ms',
      warren: [],
      direct: [],
      directName: 'runsc exec cat file',
    };
    for (let i = 0; i < FILE_RUNS; i++) {
      up.warren.push(
        (
          await timed(async () => {
            const res = await p.api(`/v1/sandboxes/${sbx}/files?path=/tmp/big`, {
              method: 'PUT',
              body: Readable.toWeb(bytes(FILE_MB)) as ReadableStream,
              headers: { 'content-type': 'application/octet-stream' },
              duplex: 'half',
            } as RequestInit);
            await res.json();
          })
        )[0],
      );
      down.warren.push(
        (
          await timed(async () => {
            const res = await p.api(`/v1/sandboxes/${sbx}/files?path=/tmp/big`);
            for await (const _ of res.body as unknown as AsyncIterable<Uint8Array>) void _;
          })
        )[0],
      );
      up.direct.push(
        (
          await timed(() =>
            direct.runsc(['exec', dsbx, 'sh', '-c', 'cat > /tmp/big'], bytes(FILE_MB)),
          )
        )[0],
      );
      down.direct.push((await timed(() => direct.runsc(['exec', dsbx, 'cat', '/tmp/big'])))[0]);
      await p.api(`/v1/sandboxes/${sbx}/files?path=/tmp/big`, { method: 'DELETE' });
      await direct.runsc(['exec', dsbx, 'rm', '-f', '/tmp/big']);
    }
    rows.push(up, down);

    // Preview URLs: the same app in a sandbox and on the host's loopback.
    const preview = await previewRows(p);
    rows.push(...preview.rows);
    extra.push(...preview.notes);

    // Snapshots, restores from them, hibernate and wake, fork-tree (issue 3).
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
    rows.push(snapRow, fromSnap, hib, wake);
    fromSnapRatio.push(fromSnap.warren, fromSnap.direct);

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
    rows.push(fork);
    await destroyDirect([live]);
    extra.push(
      `snapshot size: ${(snapBytes / 1048576).toFixed(1)} MiB; fork-tree parent pause: ${tree.parent_pause_ms} ms`,
    );

    const tpl = await templateRows(
      (tp, image, template) => direct.restoreAndExec(tp, image, template),
      destroyDirect,
    );
    rows.push(...tpl.rows);
    extra.push(
      `user-built template create -> first exec median within 1.3x of direct restore: ${(median(tpl.createRow.warren) / median(tpl.createRow.direct)).toFixed(2)}x`,
    );

    console.log(
      `\nWarren benchmark — runsc ${p.context.runtimeVersion}, ${new Date().toISOString()}\n`,
    );
    printTable(rows);
    const targets = [
      `create -> first exec median within 1.3x of direct restore: ${(median(seq.warren) / median(seq.direct)).toFixed(2)}x`,
      `exec round trip median at least 3x faster than runsc exec: ${(median(execRow.direct) / median(execRow.warren)).toFixed(2)}x faster`,
    ];
    console.log('\nTargets:\n  ' + targets.join('\n  '));
    extra.push(
      `snapshot -> first exec median within 1.3x of direct restore: ${(median(fromSnapRatio[0]!) / median(fromSnapRatio[1]!)).toFixed(2)}x`,
    );
    if (extra.length) console.log('\n' + extra.join('\n'));
    writeFileSync(
      join(p.context.config.templatesDir, '..', 'bench-latest.json'),
      JSON.stringify({ at: new Date().toISOString(), rows }, null, 2),
    );
  } finally {
    for (const id of cleanup)
      await p.api(`/v1/sandboxes/${id}`, { method: 'DELETE' }).catch(() => undefined);
    await p.stop();
    spawnSync(RUNSC, ['--root', direct.root, 'list']);
    rmSync(direct.dir, { recursive: true, force: true });
  }
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor((s.length - 1) / 2)]!;
}

await main();

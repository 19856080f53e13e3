/**
 * The direct side of the database benchmark: the `postgres-17` template's
 * snapshot restored with runsc by hand (the same runsc, flags and image
 * Warren uses), Postgres started from the template's seed cluster with
 * `runsc exec`, queried with psql over its Unix socket.
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DB_TEMPLATE, PG_BIN, SEED_DIR } from '../../packages/server/src/databases/postgres/layout';
import type { TestPlatform } from '../../test/fixture';
import type { Direct } from '../direct';
import { now } from '../stats';

/** Where the direct cluster lives in its sandbox: a temp dir of the root (its socket too). */
const DATA = '/tmp/pg-direct';

/** Copies the seed, starts Postgres on it (settings like Warren's, no TCP) and waits for it. */
const START = `set -e
cp -a ${SEED_DIR} ${DATA}
chmod 0700 ${DATA}
cat >${DATA}/warren.conf <<EOF
listen_addresses = ''
unix_socket_directories = '${DATA}'
shared_buffers = '128MB'
dynamic_shared_memory_type = posix
huge_pages = off
EOF
${PG_BIN}/pg_ctl start -D ${DATA} -l ${DATA}/startup.log -w -s
`;
const SELECT_ONE = `${PG_BIN}/psql -X -At -h ${DATA} -d postgres -c 'select 1' | grep -qx 1`;

export class DirectPostgres {
  private n = 0;
  /** Containers that run (destroyed at the end). */
  readonly live = new Set<string>();
  private user: string | null = null;

  constructor(
    readonly p: TestPlatform,
    readonly direct: Direct,
  ) {}

  /** uid:gid of `postgres` in the template's root. */
  private async postgresUser(): Promise<string> {
    if (this.user) return this.user;
    const t = await this.p.host.templateRecord(DB_TEMPLATE);
    const line = readFileSync(join(t.rootfs, 'etc/passwd'), 'utf8')
      .split('\n')
      .find((l) => l.startsWith('postgres:'));
    const [, , uid, gid] = line?.split(':') ?? [];
    if (!uid || !gid) throw new Error('no postgres user in the template root');
    this.user = `${uid}:${gid}`;
    return this.user;
  }

  /** runsc restore of the template snapshot (or of `image`), with Warren's database sizes. */
  async restore(image?: string): Promise<string> {
    const t = await this.p.host.templateRecord(DB_TEMPLATE);
    const id = `dpg-${process.pid}-${this.n++}`;
    const workDir = join(this.direct.dir, id);
    mkdirSync(join(workDir, 'chan'), { recursive: true });
    mkdirSync(join(workDir, 'overlay'));
    mkdirSync(join(workDir, 'volumes'));
    const spec = {
      id,
      rootfs: t.rootfs,
      guestDir: join(this.p.context.config.templatesDir, '.guest', t.guest_key),
      channelDir: join(workDir, 'chan'),
      workDir,
      cpu: 1,
      memoryMb: 1024,
      hostname: id,
      env: {},
      filestoreDir: join(workDir, 'overlay'),
      volumesDir: join(workDir, 'volumes'),
    };
    await this.direct.driver.restore(spec, image ?? t.snapshot);
    this.live.add(id);
    return id;
  }

  /** runsc exec of a /bin/sh script as postgres; rejects unless it exits 0. */
  async asPostgres(id: string, script: string): Promise<void> {
    const user = await this.postgresUser();
    await this.direct.runsc([
      'exec',
      '--user',
      user,
      '--cwd',
      '/',
      '--env',
      'PATH=/usr/bin:/bin',
      id,
      '/bin/sh',
      '-c',
      script,
    ]);
  }

  /** Restore of the template, seed copied, pg_ctl start -w, psql select 1: [ms, container]. */
  async createAndQuery(): Promise<[number, string]> {
    const t = now();
    const id = await this.restore();
    await this.asPostgres(id, `${START}\n${SELECT_ONE}`);
    return [now() - t, id];
  }

  /** runsc checkpoint (the container stops) of a container with Postgres running. */
  async hibernate(id: string, image: string): Promise<void> {
    await this.direct.runsc(['checkpoint', '--compression=none', '--image-path', image, id]);
    await this.destroy(id);
  }

  /**
   * runsc restore of a checkpoint, then runsc exec true: [ms, container].
   * (Not psql: Postgres started with `runsc exec` is not alive after a
   * restore, its processes are defunct; Warren's, started by the guest
   * agent, is.)
   */
  async wakeAndExec(image: string): Promise<[number, string]> {
    const t = now();
    const id = await this.restore(image);
    await this.direct.runsc(['exec', id, 'true']);
    return [now() - t, id];
  }

  async destroy(id: string): Promise<void> {
    await this.direct.driver.destroy(id);
    this.live.delete(id);
  }

  async destroyAll(): Promise<void> {
    for (const id of [...this.live]) await this.destroy(id).catch(() => undefined);
  }
}

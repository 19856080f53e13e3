/**
 * Hosts: the agents that joined this control plane, their leases and where
 * new sandboxes go. An admin makes a one-use join token; an agent joins with
 * it and gets its host id and credential; from then on it heartbeats with
 * the credential, which renews its lease and tells the control plane where
 * its HostApi answers. A host whose lease runs out is lost: its epoch is
 * raised and its sandboxes are recorded stopped, so an agent that comes back
 * from a freeze or a cut is fenced (HOST_FENCED) until it has torn down what
 * it held and heartbeats under the new epoch. See docs/multi-host.md.
 */
import { timingSafeEqual } from 'node:crypto';
import {
  newId,
  randomText,
  WarrenError,
  type Host,
  type HostApi,
  type HostCapacity,
  type HostHeartbeat,
  type HostHeartbeatResponse,
  type HostJoinRequest,
  type HostJoinResponse,
  type HostJoinToken,
} from '@warren/protocol';
import { hashToken } from '../auth';
import type { SandboxLifecycle } from '../sandboxes/lifecycle';
import { reconcileSandboxes } from '../sandboxes/reconcile';
import { HostQueries, type HostRow } from '../store/hosts';
import type { Store } from '../store/store';
import { moveOff } from './drain';
import { LIVE_STATES, recoverLostHost, type Recovery } from './recovery';
import { place, type Placement, type PlacementCandidate, type PlacementRequest } from './placement';
import type { HostRouter } from './router';

export type ConnectHost = (o: { id: string; url: string; credential: string }) => Promise<HostApi>;

export interface HostServiceOptions {
  leaseMs: number;
  connect: ConnectHost;
  version: string;
  /** Snapshots are in a store every host reads (S3): a lost host's persistent sandboxes are restored elsewhere. */
  sharedSnapshots: boolean;
  log: { warn(o: object, m: string): void; info(o: object, m: string): void };
}

function same(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

interface Info {
  version?: string;
  templates?: string[];
}

export class HostService {
  readonly queries: HostQueries;
  private localDraining = false;
  private localReason = 'the agent in the control plane process';
  private draining: Promise<void> = Promise.resolve();
  private timer: NodeJS.Timeout | null = null;
  private connecting = new Map<string, Promise<void>>();

  constructor(
    private readonly store: Store,
    readonly router: HostRouter,
    private readonly lifecycle: SandboxLifecycle,
    private readonly o: HostServiceOptions,
  ) {
    this.queries = new HostQueries(store.db);
  }

  async createJoinToken(ttlSeconds = 3600): Promise<HostJoinToken> {
    const token = `wjt_${randomText(32)}`;
    const expiresAt = Date.now() + ttlSeconds * 1000;
    await this.queries.insertJoinToken(hashToken(token), expiresAt);
    return { token, expires_at: new Date(expiresAt).toISOString() };
  }

  async join(req: HostJoinRequest): Promise<HostJoinResponse> {
    const id = req.host_id ?? newId('host');
    if (id === this.router.local.id || (await this.queries.get(id)))
      throw new WarrenError('HOST_EXISTS', `host ${id} has joined already`);
    if (!(await this.queries.useJoinToken(hashToken(req.token), id, Date.now())))
      throw new WarrenError('JOIN_TOKEN_INVALID', 'the join token is unknown, expired or used');
    const credential = `whc_${randomText(40)}`;
    await this.queries.insert({
      id,
      url: '',
      credential,
      state: 'active',
      epoch: 1,
      lease_expires_at: Date.now() + this.o.leaseMs,
      joined_at: new Date().toISOString(),
      last_heartbeat_at: null,
      capacity: '{}',
      info: '{}',
      state_reason: 'joined',
    });
    this.o.log.info({ host: id }, 'host joined');
    return { host_id: id, credential, epoch: 1, lease_seconds: Math.round(this.o.leaseMs / 1000) };
  }

  /** The host a credential belongs to; UNAUTHORIZED for anything else (a spoofed id included). */
  private async authenticate(id: string, credential: string): Promise<HostRow> {
    const row = await this.queries.get(id);
    if (!row || !same(row.credential, credential))
      throw new WarrenError('UNAUTHORIZED', `not the credential of host ${id}`);
    return row;
  }

  async heartbeat(
    id: string,
    credential: string,
    hb: HostHeartbeat,
  ): Promise<HostHeartbeatResponse> {
    const row = await this.authenticate(id, credential);
    if (hb.epoch !== row.epoch)
      throw new WarrenError(
        'HOST_FENCED',
        `host ${id} was fenced (${row.state_reason}): tear down everything and heartbeat under epoch ${row.epoch}`,
        { epoch: row.epoch },
      );
    const now = Date.now();
    const state = row.state === 'lost' ? 'active' : row.state;
    const lease = now + this.o.leaseMs;
    await this.queries.update(id, {
      url: hb.url,
      state,
      state_reason: row.state === 'lost' ? 'rejoined empty' : row.state_reason,
      lease_expires_at: lease,
      last_heartbeat_at: new Date(now).toISOString(),
      capacity: JSON.stringify(hb.capacity),
      info: JSON.stringify({ version: hb.version, templates: hb.templates } satisfies Info),
    });
    if (!this.router.connected(id) || row.url !== hb.url) await this.attach(id, hb.url, credential);
    return {
      state: state as Host['state'],
      epoch: row.epoch,
      lease_expires_at: new Date(lease).toISOString(),
    };
  }

  /** Connects to a host's HostApi and reconciles what the store says it runs. */
  private attach(id: string, url: string, credential: string): Promise<void> {
    const running = this.connecting.get(id);
    if (running) return running;
    const work = (async () => {
      const host = await this.o.connect({ id, url, credential });
      await reconcileSandboxes(this.store, host, this.lifecycle);
      this.router.connect(host);
      this.o.log.info({ host: id, url }, 'host connected');
    })().finally(() => this.connecting.delete(id));
    this.connecting.set(id, work);
    return work;
  }

  /** At start: reconnects to the hosts that held a lease (they heartbeat again soon anyway). */
  async reconnectAll(): Promise<void> {
    for (const row of await this.queries.list()) {
      if (row.state === 'lost' || !row.url) continue;
      await this.attach(row.id, row.url, row.credential).catch((err: Error) =>
        this.o.log.warn({ host: row.id, err: err.message }, 'host not reached at start'),
      );
    }
  }

  /** One pass of the lease watch: every host past its lease is lost. */
  async expireLeases(now = Date.now()): Promise<string[]> {
    const lost: string[] = [];
    for (const row of await this.queries.list()) {
      // Another control plane may have marked it lost: this one drops its connection too.
      if (row.state === 'lost' && this.router.connected(row.id))
        await this.router.disconnect(row.id);
      if (row.state === 'lost' || row.lease_expires_at >= now) continue;
      const secs = ((now - (row.lease_expires_at - this.o.leaseMs)) / 1000).toFixed(1);
      const reason = `lease expired: no heartbeat for ${secs} s`;
      if (!(await this.queries.expire(row.id, row.lease_expires_at, reason))) continue;
      await this.router.disconnect(row.id);
      await recoverLostHost(this.recovery(), row.id, `host ${row.id} lost (${reason})`);
      this.o.log.warn({ host: row.id, reason }, 'host lost');
      lost.push(row.id);
    }
    return lost;
  }

  start(intervalMs = Math.max(200, Math.floor(this.o.leaseMs / 10))): void {
    this.timer = setInterval(() => {
      this.expireLeases().catch((err: Error) =>
        this.o.log.warn({ err: err.message }, 'lease watch failed'),
      );
    }, intervalMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  private async counts(): Promise<Map<string, number>> {
    const rows = await this.store.db
      .selectFrom('sandboxes')
      .select(['host_id', (eb) => eb.fn.countAll<number>().as('n')])
      .where('state', 'in', [...LIVE_STATES])
      .groupBy('host_id')
      .execute();
    return new Map(rows.map((r) => [r.host_id, Number(r.n)]));
  }

  async list(): Promise<Host[]> {
    const counts = await this.counts();
    const local = this.router.local;
    const [cap, templates] = await Promise.all([local.capacity(), local.templates.list()]);
    const hosts: Host[] = [
      {
        id: local.id,
        url: '',
        state: this.localDraining ? 'draining' : 'active',
        state_reason: this.localReason,
        local: true,
        connected: true,
        epoch: 1,
        joined_at: new Date(0).toISOString(),
        last_heartbeat_at: null,
        lease_expires_at: new Date(8.64e15).toISOString(),
        version: this.o.version,
        capacity: cap,
        templates: templates.filter((t) => t.state === 'ready').map((t) => t.name),
        sandboxes: counts.get(local.id) ?? 0,
      },
    ];
    for (const row of await this.queries.list()) hosts.push(this.view(row, counts));
    return hosts;
  }

  private view(row: HostRow, counts: Map<string, number>): Host {
    const info = JSON.parse(row.info) as Info;
    const cap = JSON.parse(row.capacity) as Partial<HostCapacity>;
    return {
      id: row.id,
      url: row.url,
      state: row.state as Host['state'],
      state_reason: row.state_reason,
      local: false,
      connected: this.router.connected(row.id),
      epoch: row.epoch,
      joined_at: row.joined_at,
      last_heartbeat_at: row.last_heartbeat_at,
      lease_expires_at: new Date(row.lease_expires_at).toISOString(),
      version: info.version ?? '',
      capacity: cap.memory_budget_mb === undefined ? null : (cap as HostCapacity),
      templates: info.templates ?? [],
      sandboxes: counts.get(row.id) ?? 0,
    };
  }

  async get(id: string): Promise<Host> {
    const host = (await this.list()).find((h) => h.id === id);
    if (!host) throw new WarrenError('HOST_NOT_FOUND', `host ${id} does not exist`);
    return host;
  }

  /** Moves a drained host's databases to other hosts (set by the platform); how many moved. */
  moveDatabases: ((hostId: string) => Promise<number>) | null = null;

  /**
   * New sandboxes stop going to the host, and its persistent sandboxes, then
   * its databases, move to other hosts in the background (./drain.ts,
   * ../databases/move.ts); the host's state_reason tells the progress.
   */
  async drain(id: string): Promise<Host> {
    await this.get(id);
    await this.setDraining(id, 'drained by an admin: moving its persistent sandboxes');
    this.draining = this.draining
      .then(async () => {
        const { moved } = await moveOff(this.recovery(), id);
        const dbs = this.moveDatabases ? await this.moveDatabases(id) : 0;
        const stay = (await this.store.sandboxesOnHost(id, [...LIVE_STATES])).length;
        const what = `${moved} sandboxes and ${dbs} databases moved, ${stay} sandboxes left on it`;
        await this.setDraining(id, `drained by an admin: ${what}`);
      })
      .catch((err: Error) => this.o.log.warn({ host: id, err: err.message }, 'drain failed'));
    return this.get(id);
  }

  /** Resolves when the moves of every drain asked for so far are done. */
  drained(): Promise<void> {
    return this.draining;
  }

  private async setDraining(id: string, reason: string): Promise<void> {
    if (id === this.router.local.id) {
      this.localDraining = true;
      this.localReason = reason;
    } else await this.queries.update(id, { state: 'draining', state_reason: reason });
  }

  private recovery(): Recovery {
    return {
      store: this.store,
      router: this.router,
      lifecycle: this.lifecycle,
      place: (req) => this.place(req),
      sharedSnapshots: this.o.sharedSnapshots,
      log: this.o.log,
    };
  }

  /** Forgets a host that owns no live sandbox (or was lost). */
  async remove(id: string): Promise<void> {
    const host = await this.get(id);
    if (host.local) throw new WarrenError('INVALID_STATE', 'the local host cannot be removed');
    if (host.state !== 'lost' && host.sandboxes > 0)
      throw new WarrenError(
        'HOST_NOT_EMPTY',
        `host ${id} still owns ${host.sandboxes} sandboxes: drain it and remove them first`,
        { sandboxes: host.sandboxes },
      );
    await this.router.disconnect(id);
    await this.queries.remove(id);
  }

  /** Where a new sandbox goes, and why (recorded in its events). */
  async place(req: PlacementRequest): Promise<Placement> {
    if (this.router.ids().length === 1 && !req.pinned && !this.localDraining)
      return { hostId: this.router.local.id, reason: '' };
    const candidates: PlacementCandidate[] = (await this.list()).map((h) => ({
      id: h.id,
      state: h.state,
      connected: h.connected,
      capacity: h.capacity,
      templates: h.templates,
      sandboxes: h.sandboxes,
    }));
    // With a shared store a host lacking the template fetches it from one that has it.
    const fetchable =
      this.o.sharedSnapshots &&
      candidates.some((c) => c.connected && c.templates.includes(req.template));
    return place(candidates, { ...req, fetchable: req.fetchable ?? fetchable });
  }
}

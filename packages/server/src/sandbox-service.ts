/**
 * Control-plane logic of sandboxes: validation against templates, records
 * and state changes in the store, placement on the host agent, TTL.
 */
import {
  WarrenError,
  newId,
  type CreateSandboxRequest,
  type Sandbox,
  type SandboxState,
} from '@warren/protocol';
import type { GuestChannel, HostAgent } from '@warren/host-agent';
import type { Config } from './config';
import type { SandboxRow, Store } from './store/store';

export function toApi(row: SandboxRow): Sandbox {
  return {
    id: row.id,
    org_id: row.org_id,
    template: row.template,
    state: row.state as SandboxState,
    cpu: row.cpu,
    memory_mb: row.memory_mb,
    metadata: JSON.parse(row.metadata) as Record<string, string>,
    env_keys: Object.keys(JSON.parse(row.env) as Record<string, string>),
    ttl_seconds: row.ttl_seconds,
    host_id: row.host_id,
    created_at: row.created_at,
    last_activity_at: row.last_activity_at,
    expires_at: row.expires_at,
    stopped_at: row.stopped_at,
    stop_reason: row.stop_reason,
  };
}

function later(from: Date, seconds: number): string {
  return new Date(from.getTime() + seconds * 1000).toISOString();
}

export class SandboxService {
  constructor(
    private readonly store: Store,
    private readonly host: HostAgent,
    private readonly config: Config,
  ) {}

  async create(orgId: string, req: CreateSandboxRequest): Promise<Sandbox> {
    const template = await this.host.templates.get(req.template);
    const cpu = req.cpu ?? template.default_cpu;
    const memoryMb = req.memory_mb ?? template.default_memory_mb;
    if (cpu > template.max_cpu || memoryMb > template.max_memory_mb || memoryMb < 64) {
      throw new WarrenError(
        'RESOURCES_OUT_OF_RANGE',
        `template ${template.name} allows cpu up to ${template.max_cpu} and memory_mb from 64 to ${template.max_memory_mb}`,
        { max_cpu: template.max_cpu, max_memory_mb: template.max_memory_mb },
      );
    }
    const now = new Date();
    const ttl = req.ttl_seconds ?? this.config.defaultTtlSeconds;
    const env = req.env ?? {};
    const row: SandboxRow = {
      id: newId('sandbox'),
      org_id: orgId,
      host_id: this.host.id,
      template: template.name,
      state: 'creating',
      cpu,
      memory_mb: memoryMb,
      metadata: JSON.stringify(req.metadata ?? {}),
      env: JSON.stringify(env),
      ttl_seconds: ttl,
      created_at: now.toISOString(),
      last_activity_at: now.toISOString(),
      expires_at: later(now, ttl),
      stopped_at: null,
      stop_reason: null,
    };
    await this.store.insertSandbox(row, 'create');
    try {
      await this.host.createSandbox({ id: row.id, template: template.name, cpu, memoryMb, env });
    } catch (err) {
      // Nothing half-created survives: the host agent has already undone its part.
      await this.store.deleteSandboxRow(row.id);
      throw err;
    }
    await this.store.setState(row.id, 'running', 'restored from template snapshot');
    return this.get(orgId, row.id);
  }

  async row(orgId: string, id: string): Promise<SandboxRow> {
    const row = await this.store.getSandbox(orgId, id);
    if (!row) throw new WarrenError('SANDBOX_NOT_FOUND', `sandbox ${id} does not exist`);
    return row;
  }

  async get(orgId: string, id: string): Promise<Sandbox> {
    return toApi(await this.row(orgId, id));
  }

  /** Resolves a running sandbox for an operation on it and counts that as activity (TTL). */
  async use(orgId: string, id: string): Promise<GuestChannel> {
    let row = await this.row(orgId, id);
    // A paused or hibernated sandbox is brought back first; the caller sees only latency.
    if (row.state === 'paused' || row.state === 'hibernated') {
      await this.transition(
        row,
        row.state === 'paused' ? 'resume' : 'wake',
        'implicit, on use',
        true,
      );
      row = await this.row(orgId, id);
    }
    if (row.state !== 'running')
      throw new WarrenError('SANDBOX_NOT_RUNNING', `sandbox ${id} is ${row.state}`);
    await this.touch(row);
    return this.host.channel(id);
  }

  /** One lifecycle change at a time per sandbox: concurrent requests wait for it. */
  private readonly locks = new Map<string, Promise<unknown>>();

  private async locked<T>(id: string, fn: () => Promise<T>): Promise<T> {
    const previous = this.locks.get(id) ?? Promise.resolve();
    const next = previous.catch(() => undefined).then(fn);
    this.locks.set(id, next);
    try {
      return await next;
    } finally {
      if (this.locks.get(id) === next) this.locks.delete(id);
    }
  }

  /** pause, resume, hibernate, wake: each allowed only from the states listed here. */
  private static readonly TRANSITIONS = {
    pause: { from: ['running'], to: 'paused' },
    resume: { from: ['paused'], to: 'running' },
    hibernate: { from: ['running', 'paused'], to: 'hibernated' },
    wake: { from: ['hibernated'], to: 'running' },
  } as const;

  async transition(
    row: SandboxRow,
    action: keyof typeof SandboxService.TRANSITIONS,
    cause: string,
    /** Implicit transitions are satisfied when a concurrent request already made them. */
    implicit = false,
  ): Promise<Sandbox> {
    const rule = SandboxService.TRANSITIONS[action];
    return this.locked(row.id, async () => {
      const current = await this.row(row.org_id, row.id);
      if (!(implicit && current.state === rule.to)) {
        if (!(rule.from as readonly string[]).includes(current.state)) {
          throw new WarrenError(
            'INVALID_STATE',
            `cannot ${action} sandbox ${row.id}: it is ${current.state} (needs ${rule.from.join(' or ')})`,
          );
        }
        if (action === 'pause') await this.host.pause(row.id);
        else if (action === 'resume') await this.host.resume(row.id);
        else if (action === 'hibernate') await this.host.hibernate(row.id);
        else await this.host.wake(row.id, JSON.parse(current.env) as Record<string, string>);
        await this.store.setState(row.id, rule.to, `${action} (${cause})`);
      }
      return this.get(row.org_id, row.id);
    });
  }

  async events(orgId: string, id: string) {
    await this.row(orgId, id);
    return this.store.sandboxEvents(id);
  }

  /** Counts the end of a long operation (an exec that ran for minutes) as activity too. */
  async activity(orgId: string, id: string): Promise<void> {
    const row = await this.store.getSandbox(orgId, id);
    if (row?.state === 'running') await this.touch(row);
  }

  private async touch(row: SandboxRow): Promise<void> {
    const now = new Date();
    await this.store.updateSandbox(row.id, {
      last_activity_at: now.toISOString(),
      expires_at: later(now, row.ttl_seconds),
    });
  }

  async update(
    orgId: string,
    id: string,
    patch: { metadata?: Record<string, string>; ttl_seconds?: number },
  ): Promise<Sandbox> {
    const row = await this.row(orgId, id);
    if (row.state === 'stopped')
      throw new WarrenError('SANDBOX_NOT_RUNNING', `sandbox ${id} is stopped`);
    const now = new Date();
    const ttl = patch.ttl_seconds ?? row.ttl_seconds;
    await this.store.updateSandbox(id, {
      ...(patch.metadata ? { metadata: JSON.stringify(patch.metadata) } : {}),
      ttl_seconds: ttl,
      last_activity_at: now.toISOString(),
      expires_at: later(now, ttl),
    });
    return this.get(orgId, id);
  }

  /** Destroys a sandbox; an already stopped one is left as it is (`deleted: false`). */
  async destroy(orgId: string, id: string, reason = 'deleted'): Promise<boolean> {
    return this.locked(id, async () => {
      const row = await this.row(orgId, id);
      if (row.state === 'stopped') return false;
      await this.stop(row, reason);
      return true;
    });
  }

  private async stop(row: SandboxRow, reason: string): Promise<void> {
    await this.store.setState(row.id, 'stopping', reason);
    await this.host.destroySandbox(row.id);
    await this.store.setState(row.id, 'stopped', reason, {
      stopped_at: new Date().toISOString(),
      stop_reason: reason,
    });
  }

  /** Destroys running sandboxes whose TTL has passed; returns their ids. */
  async reapExpired(): Promise<string[]> {
    const expired = await this.store.expiredSandboxes(new Date().toISOString());
    for (const row of expired) await this.destroy(row.org_id, row.id, 'ttl_expired');
    return expired.map((r) => r.id);
  }

  /** After a restart: reattach to running sandboxes, mark the ones that are gone. */
  async reconcile(): Promise<void> {
    const rows = await this.store.sandboxesOnHost(this.host.id, [
      'creating',
      'running',
      'paused',
      'stopping',
    ]);
    const live = (r: SandboxRow) => r.state === 'running' || r.state === 'paused';
    const running = rows.filter(live);
    const lost = new Set(
      await this.host.reconcile(
        running.map((r) => ({
          id: r.id,
          memoryMb: r.memory_mb,
          env: JSON.parse(r.env) as Record<string, string>,
          paused: r.state === 'paused',
        })),
      ),
    );
    for (const row of rows) {
      if (live(row) && !lost.has(row.id)) continue;
      const reason = live(row) ? 'lost' : `interrupted while ${row.state}`;
      await this.host.destroySandbox(row.id);
      await this.store.setState(row.id, 'stopped', reason, {
        stopped_at: new Date().toISOString(),
        stop_reason: reason,
      });
    }
  }
}

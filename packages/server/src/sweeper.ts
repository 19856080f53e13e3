/** Periodic housekeeping: TTL expiry, idle hibernation, the idle-awake limit, purge of old records. */
import type { FastifyBaseLogger } from 'fastify';
import type { IdleSweeps } from './sandboxes/sweeps';
import type { Store } from './store/store';

export class Sweeper {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  /** Purges are the leader's (store/leader.ts); the sweeps filter by host themselves. */
  leads: () => boolean = () => true;

  constructor(
    private readonly sandboxes: IdleSweeps,
    private readonly store: Store,
    private readonly intervalMs: number,
    private readonly retentionSeconds: number,
    private readonly log: FastifyBaseLogger,
  ) {}

  start(): void {
    this.timer = setInterval(() => void this.sweep(), this.intervalMs);
    this.timer.unref();
  }

  async sweep(): Promise<void> {
    if (this.running) return this.running;
    this.running = (async () => {
      try {
        const reaped = await this.sandboxes.reapExpired();
        for (const id of reaped) this.log.info({ sandbox: id }, 'sandbox TTL expired; destroyed');
        for (const dead of await this.sandboxes.reapDead())
          this.log.warn({ sandbox: dead.id, cause: dead.cause }, 'sandbox runtime died; stopped');
        const idle = await this.sandboxes.hibernateIdle();
        for (const id of idle)
          this.log.info({ sandbox: id }, 'persistent sandbox idle; hibernated');
        for (const id of await this.sandboxes.hibernateExcessIdle())
          this.log.info({ sandbox: id }, 'too many idle sandboxes awake; hibernated');
        if (this.leads())
          await this.store.purgeStopped(
            new Date(Date.now() - this.retentionSeconds * 1000).toISOString(),
          );
      } catch (err) {
        this.log.error({ err }, 'sweep failed');
      } finally {
        this.running = null;
      }
    })();
    return this.running;
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.running;
  }
}

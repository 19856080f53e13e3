/**
 * Delivers the outbox. Each pass takes the due pending rows, oldest first,
 * and starts at most one delivery per endpoint at a time, so an endpoint
 * receives its messages one after another in the order they happened (a
 * message waiting for its retry does not hold back the ones after it). A
 * failed attempt is rescheduled along the retry schedule; an endpoint whose
 * every attempt has failed for longer than the disable period is disabled.
 * All state is in the store: after a restart the next pass carries on.
 */
import type { OutboxRow, WebhookEndpointRow, WebhookQueries } from '../store/webhooks';
import { attemptDelivery, type AttemptResult } from './deliver';
import { retryDelay } from './schedule';

export interface WebhookSettings {
  /** Multiplies the retry schedule (1: the real one; tests use a small fraction). */
  retryScale: number;
  timeoutMs: number;
  /** An endpoint failing every attempt for this long is disabled. */
  disableAfterMs: number;
  /** How long the previous secret keeps signing after a rotation. */
  secretGraceMs: number;
  /** Longest wait between passes; an emitted event starts one at once. */
  pollMs: number;
  /** How long delivered and failed messages and the attempt log are kept. */
  retentionMs: number;
}

const PURGE_EVERY_MS = 3600_000;

export interface DispatchLog {
  warn(obj: object, msg: string): void;
}

export class Dispatcher {
  private readonly busy = new Set<string>();
  private readonly inFlight = new Set<Promise<void>>();
  private readonly abort = new AbortController();
  private timer: NodeJS.Timeout | null = null;
  private running = false;
  private passing: Promise<void> | null = null;
  private again = false;
  private purgedAt = 0;

  /** Whether this control plane delivers (set by the platform). */
  leads: () => boolean = () => true;
  /** Told of each message's end, delivered or failed after its last attempt (metrics). */
  onFinished: ((result: 'delivered' | 'failed', seconds: number) => void) | null = null;

  constructor(
    private readonly q: WebhookQueries,
    private readonly settings: WebhookSettings,
    private readonly log: DispatchLog,
  ) {}

  start(): void {
    this.running = true;
    this.kick();
  }

  /** Stops passes and aborts deliveries in flight: those stay pending for the next start. */
  async stop(): Promise<void> {
    this.running = false;
    if (this.timer) clearTimeout(this.timer);
    this.abort.abort();
    await this.passing;
    await Promise.all([...this.inFlight]);
  }

  /** Runs a pass now (or right after the one running). */
  kick(): void {
    if (!this.running) return;
    if (this.passing) {
      this.again = true;
      return;
    }
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.passing = this.pass()
      .catch((err: unknown) => this.log.warn({ err }, 'webhook dispatch pass failed'))
      .finally(() => {
        this.passing = null;
        if (this.again) {
          this.again = false;
          this.kick();
        } else void this.schedule();
      });
  }

  private async schedule(): Promise<void> {
    if (!this.running) return;
    // An endpoint with a delivery in flight is looked at again when it ends (kick).
    const next = await this.q.nextDue([...this.busy]).catch(() => null);
    if (!this.running || this.passing) return;
    const wait = next === null ? this.settings.pollMs : Math.max(0, next - Date.now());
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => this.kick(), Math.min(wait, this.settings.pollMs));
  }

  private async pass(): Promise<void> {
    // With several control planes, the leader delivers (store/leader.ts): once, in order.
    if (!this.leads()) return;
    if (Date.now() - this.purgedAt > PURGE_EVERY_MS) {
      this.purgedAt = Date.now();
      await this.q.purge(new Date(Date.now() - this.settings.retentionMs).toISOString());
    }
    for (const row of await this.q.due(Date.now())) {
      if (this.busy.has(row.endpoint_id)) continue;
      this.busy.add(row.endpoint_id);
      const job: Promise<void> = this.deliver(row)
        .catch((err: unknown) =>
          this.log.warn({ err, endpoint: row.endpoint_id }, 'delivery failed'),
        )
        .finally(() => {
          this.busy.delete(row.endpoint_id);
          this.inFlight.delete(job);
          this.kick();
        });
      this.inFlight.add(job);
    }
  }

  private secrets(ep: WebhookEndpointRow, now: number): string[] {
    const grace =
      ep.previous_secret &&
      ep.previous_secret_expires_at &&
      Date.parse(ep.previous_secret_expires_at) > now;
    return grace ? [ep.secret, ep.previous_secret!] : [ep.secret];
  }

  private async deliver(row: OutboxRow): Promise<void> {
    const ep = await this.q.endpointById(row.endpoint_id);
    if (!ep || ep.disabled_at) return;
    const result = await attemptDelivery({
      url: ep.url,
      messageId: row.message_id,
      body: row.payload,
      secrets: this.secrets(ep, Date.now()),
      timeoutMs: this.settings.timeoutMs,
      signal: this.abort.signal,
    });
    // Cut short by shutdown: not an attempt; the row stays due for the next start.
    if (this.abort.signal.aborted) return;
    await this.record(row, ep, result);
  }

  private async record(row: OutboxRow, ep: WebhookEndpointRow, r: AttemptResult): Promise<void> {
    // Deleted while the attempt was made: nothing left to record it against.
    if (!(await this.q.endpointById(ep.id))) return;
    const now = Date.now();
    const at = new Date(now).toISOString();
    const attempt = row.attempts + 1;
    await this.q.recordAttempt({
      endpoint_id: row.endpoint_id,
      outbox_id: row.id,
      message_id: row.message_id,
      event_type: row.event_type,
      attempt,
      status_code: r.status,
      latency_ms: r.latencyMs,
      response: r.response,
      error: r.error,
      at,
    });
    if (r.ok) {
      await this.q.updateOutbox(row.id, { state: 'delivered', attempts: attempt });
      this.onFinished?.('delivered', (now - Date.parse(row.created_at)) / 1000);
      if (ep.failing_since) await this.q.updateEndpoint(ep.id, { failing_since: null });
      return;
    }
    const delay = retryDelay(attempt, this.settings.retryScale);
    await this.q.updateOutbox(
      row.id,
      delay === null
        ? { state: 'failed', attempts: attempt }
        : { attempts: attempt, next_attempt_at: now + delay },
    );
    if (delay === null) this.onFinished?.('failed', (now - Date.parse(row.created_at)) / 1000);
    const since = ep.failing_since ?? at;
    if (!ep.failing_since) await this.q.updateEndpoint(ep.id, { failing_since: since });
    if (now - Date.parse(since) >= this.settings.disableAfterMs) {
      const reason = `every delivery attempt failed since ${since} (last: ${r.error ?? 'error'})`;
      await this.q.disableEndpoint(ep.id, at, reason);
    }
  }
}

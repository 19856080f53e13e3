/**
 * Webhook endpoints of each organisation and the events sent to them. An
 * event becomes one outbox row per enabled endpoint whose filters match,
 * written to the store before anything is sent; the dispatcher delivers them.
 */
import { randomBytes } from 'node:crypto';
import {
  WarrenError,
  newId,
  type CreateWebhookRequest,
  type UpdateWebhookRequest,
  type WebhookDelivery,
  type WebhookEndpoint,
  type WebhookEndpointWithSecret,
} from '@warren/protocol';
import type { Store } from '../store/store';
import { WebhookQueries, type WebhookEndpointRow } from '../store/webhooks';
import { Dispatcher, type DispatchLog, type WebhookSettings } from './dispatcher';
import { checkFilters, checkUrl, matchesFilters } from './filters';

/** `whsec_` and 32 random bytes in base64, the Standard Webhooks secret format. */
export function newSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

function view(row: WebhookEndpointRow): WebhookEndpoint {
  const graceLeft =
    row.previous_secret_expires_at && Date.parse(row.previous_secret_expires_at) > Date.now();
  return {
    id: row.id,
    url: row.url,
    description: row.description,
    events: JSON.parse(row.events) as string[],
    enabled: row.disabled_at === null,
    disabled_at: row.disabled_at,
    disabled_reason: row.disabled_reason,
    failing_since: row.failing_since,
    previous_secret_expires_at: graceLeft ? row.previous_secret_expires_at : null,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

export class WebhookService {
  readonly q: WebhookQueries;
  readonly dispatcher: Dispatcher;

  constructor(
    store: Store,
    private readonly settings: WebhookSettings,
    log: DispatchLog,
  ) {
    this.q = new WebhookQueries(store.db);
    this.dispatcher = new Dispatcher(this.q, settings, log);
  }

  private async row(orgId: string, id: string): Promise<WebhookEndpointRow> {
    const row = await this.q.endpoint(orgId, id);
    if (!row) throw new WarrenError('WEBHOOK_NOT_FOUND', `webhook endpoint ${id} does not exist`);
    return row;
  }

  async create(orgId: string, req: CreateWebhookRequest): Promise<WebhookEndpointWithSecret> {
    const url = checkUrl(req.url);
    const events = req.events ?? ['*'];
    checkFilters(events);
    const now = new Date().toISOString();
    const row: WebhookEndpointRow = {
      id: newId('webhook'),
      org_id: orgId,
      url,
      description: req.description ?? '',
      events: JSON.stringify(events),
      secret: newSecret(),
      previous_secret: null,
      previous_secret_expires_at: null,
      disabled_at: null,
      disabled_reason: null,
      failing_since: null,
      created_at: now,
      updated_at: now,
    };
    await this.q.insertEndpoint(row);
    return { ...view(row), secret: row.secret };
  }

  async list(orgId: string): Promise<WebhookEndpoint[]> {
    return (await this.q.endpoints(orgId)).map(view);
  }

  async get(orgId: string, id: string): Promise<WebhookEndpoint> {
    return view(await this.row(orgId, id));
  }

  async update(orgId: string, id: string, patch: UpdateWebhookRequest): Promise<WebhookEndpoint> {
    const row = await this.row(orgId, id);
    const url = patch.url !== undefined ? checkUrl(patch.url) : undefined;
    if (patch.events) checkFilters(patch.events);
    const now = new Date().toISOString();
    await this.q.updateEndpoint(row.id, {
      ...(url !== undefined && { url }),
      ...(patch.events && { events: JSON.stringify(patch.events) }),
      ...(patch.description !== undefined && { description: patch.description }),
      // Re-enabling starts afresh.
      ...(patch.enabled === true &&
        row.disabled_at && { disabled_at: null, disabled_reason: null, failing_since: null }),
      updated_at: now,
    });
    if (patch.enabled === false && !row.disabled_at)
      await this.q.disableEndpoint(row.id, now, 'disabled through the API');
    return this.get(orgId, id);
  }

  async remove(orgId: string, id: string): Promise<void> {
    await this.q.deleteEndpoint((await this.row(orgId, id)).id);
  }

  /** A new secret; the old one keeps signing alongside it for the grace period. */
  async rotateSecret(orgId: string, id: string): Promise<WebhookEndpointWithSecret> {
    const row = await this.row(orgId, id);
    const secret = newSecret();
    const now = Date.now();
    await this.q.updateEndpoint(row.id, {
      secret,
      previous_secret: row.secret,
      previous_secret_expires_at: new Date(now + this.settings.secretGraceMs).toISOString(),
      updated_at: new Date(now).toISOString(),
    });
    return { ...(await this.get(orgId, id)), secret };
  }

  async deliveries(orgId: string, id: string, limit: number): Promise<WebhookDelivery[]> {
    const row = await this.row(orgId, id);
    return (await this.q.attempts(row.id, limit)).map((a) => ({
      message_id: a.message_id,
      event_type: a.event_type,
      attempt: a.attempt,
      status_code: a.status_code,
      latency_ms: a.latency_ms,
      response: a.response,
      error: a.error,
      delivered: a.error === null,
      at: a.at,
    }));
  }

  /** Sends a message to the endpoint again, as a new series of attempts. */
  async redeliver(orgId: string, id: string, messageId: string) {
    const row = await this.row(orgId, id);
    const msg = await this.q.message(row.id, messageId);
    if (!msg)
      throw new WarrenError(
        'WEBHOOK_MESSAGE_NOT_FOUND',
        `no message ${messageId} was sent to webhook endpoint ${id}`,
      );
    if (row.disabled_at)
      throw new WarrenError(
        'WEBHOOK_DISABLED',
        `webhook endpoint ${id} is disabled: enable it (PATCH enabled: true) first`,
      );
    await this.q.enqueue([
      {
        endpoint_id: row.id,
        message_id: msg.message_id,
        event_type: msg.event_type,
        payload: msg.payload,
        state: 'pending',
        attempts: 0,
        next_attempt_at: Date.now(),
        created_at: new Date().toISOString(),
      },
    ]);
    this.dispatcher.kick();
    return { endpoint_id: row.id, message_id: msg.message_id, state: 'pending' as const };
  }

  /**
   * Emits an event to the organisation's endpoints: the public entry point
   * for every part of Warren that has something to report. Returns the
   * message id (the webhook-id header), or null when no endpoint wants it.
   */
  async emit(orgId: string, type: string, data: Record<string, unknown>): Promise<string | null> {
    const endpoints = (await this.q.enabledEndpoints(orgId)).filter((ep) =>
      matchesFilters(JSON.parse(ep.events) as string[], type),
    );
    if (endpoints.length === 0) return null;
    const messageId = newId('message');
    const now = new Date();
    const payload = JSON.stringify({ type, timestamp: now.toISOString(), data });
    await this.q.enqueue(
      endpoints.map((ep) => ({
        endpoint_id: ep.id,
        message_id: messageId,
        event_type: type,
        payload,
        state: 'pending',
        attempts: 0,
        next_attempt_at: now.getTime(),
        created_at: now.toISOString(),
      })),
    );
    this.dispatcher.kick();
    return messageId;
  }

  /** Emits and never throws: for callers whose own work must not fail on a webhook. */
  emitQuietly(orgId: string, type: string, data: Record<string, unknown>, log: DispatchLog): void {
    this.emit(orgId, type, data).catch((err: unknown) =>
      log.warn({ err, type }, 'webhook event not recorded'),
    );
  }
}

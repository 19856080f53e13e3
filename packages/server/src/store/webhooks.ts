/**
 * Store queries of webhook endpoints, the outbox and the attempt log. An
 * event's outbox rows are written in one transaction, so a message reaches
 * either every matching endpoint's queue or none; delivery state lives here
 * too, so a restart resumes where the dispatcher stopped.
 */
import type { Kysely, Selectable, Updateable } from 'kysely';
import type {
  Database,
  WebhookAttemptTable,
  WebhookEndpointTable,
  WebhookOutboxTable,
} from './schema';

export type WebhookEndpointRow = Selectable<WebhookEndpointTable>;
export type OutboxRow = Selectable<WebhookOutboxTable>;
export type AttemptRow = Selectable<WebhookAttemptTable>;

export class WebhookQueries {
  constructor(private readonly db: Kysely<Database>) {}

  async insertEndpoint(row: WebhookEndpointRow): Promise<void> {
    await this.db.insertInto('webhook_endpoints').values(row).execute();
  }

  async endpoint(orgId: string, id: string): Promise<WebhookEndpointRow | undefined> {
    return this.db
      .selectFrom('webhook_endpoints')
      .selectAll()
      .where('org_id', '=', orgId)
      .where('id', '=', id)
      .executeTakeFirst();
  }

  async endpointById(id: string): Promise<WebhookEndpointRow | undefined> {
    return this.db
      .selectFrom('webhook_endpoints')
      .selectAll()
      .where('id', '=', id)
      .executeTakeFirst();
  }

  async endpoints(orgId: string): Promise<WebhookEndpointRow[]> {
    return this.db
      .selectFrom('webhook_endpoints')
      .selectAll()
      .where('org_id', '=', orgId)
      .orderBy('created_at')
      .orderBy('id')
      .execute();
  }

  async enabledEndpoints(orgId: string): Promise<WebhookEndpointRow[]> {
    return this.db
      .selectFrom('webhook_endpoints')
      .selectAll()
      .where('org_id', '=', orgId)
      .where('disabled_at', 'is', null)
      .execute();
  }

  async updateEndpoint(id: string, patch: Updateable<WebhookEndpointTable>): Promise<void> {
    await this.db.updateTable('webhook_endpoints').set(patch).where('id', '=', id).execute();
  }

  /** Disables an endpoint and abandons what was still queued for it. */
  async disableEndpoint(id: string, at: string, reason: string): Promise<void> {
    await this.db.transaction().execute(async (tx) => {
      await tx
        .updateTable('webhook_endpoints')
        .set({ disabled_at: at, disabled_reason: reason, updated_at: at })
        .where('id', '=', id)
        .execute();
      await tx
        .updateTable('webhook_outbox')
        .set({ state: 'abandoned' })
        .where('endpoint_id', '=', id)
        .where('state', '=', 'pending')
        .execute();
    });
  }

  async deleteEndpoint(id: string): Promise<void> {
    await this.db.transaction().execute(async (tx) => {
      await tx.deleteFrom('webhook_attempts').where('endpoint_id', '=', id).execute();
      await tx.deleteFrom('webhook_outbox').where('endpoint_id', '=', id).execute();
      await tx.deleteFrom('webhook_endpoints').where('id', '=', id).execute();
    });
  }

  async enqueue(rows: Omit<OutboxRow, 'id'>[]): Promise<void> {
    if (rows.length === 0) return;
    await this.db.insertInto('webhook_outbox').values(rows).execute();
  }

  /** The oldest due pending row of each enabled endpoint. */
  async due(now: number): Promise<OutboxRow[]> {
    return this.db
      .selectFrom('webhook_outbox')
      .innerJoin('webhook_endpoints', 'webhook_endpoints.id', 'webhook_outbox.endpoint_id')
      .selectAll('webhook_outbox')
      .where('webhook_endpoints.disabled_at', 'is', null)
      .where('webhook_outbox.id', 'in', (eb) =>
        eb
          .selectFrom('webhook_outbox as head')
          .select((e) => e.fn.min<number>('head.id').as('id'))
          .where('head.state', '=', 'pending')
          .where('head.next_attempt_at', '<=', now)
          .groupBy('head.endpoint_id'),
      )
      .orderBy('webhook_outbox.id')
      .execute();
  }

  /** Forgets finished messages and attempts from before `before` (ISO time). */
  async purge(before: string): Promise<void> {
    await this.db.deleteFrom('webhook_attempts').where('at', '<', before).execute();
    await this.db
      .deleteFrom('webhook_outbox')
      .where('state', '!=', 'pending')
      .where('created_at', '<', before)
      .execute();
  }

  /**
   * When the next pending row falls due (epoch ms), or null with nothing
   * pending; rows of disabled endpoints and of the `busy` ones (a delivery
   * in flight) do not count.
   */
  async nextDue(busy: readonly string[]): Promise<number | null> {
    let q = this.db
      .selectFrom('webhook_outbox')
      .innerJoin('webhook_endpoints', 'webhook_endpoints.id', 'webhook_outbox.endpoint_id')
      .select((eb) => eb.fn.min('webhook_outbox.next_attempt_at').as('at'))
      .where('webhook_outbox.state', '=', 'pending')
      .where('webhook_endpoints.disabled_at', 'is', null);
    if (busy.length > 0) q = q.where('webhook_outbox.endpoint_id', 'not in', busy);
    return (await q.executeTakeFirst())?.at ?? null;
  }

  async updateOutbox(id: number, patch: Updateable<WebhookOutboxTable>): Promise<void> {
    await this.db.updateTable('webhook_outbox').set(patch).where('id', '=', id).execute();
  }

  /** The latest outbox row of a message to an endpoint. */
  async message(endpointId: string, messageId: string): Promise<OutboxRow | undefined> {
    return this.db
      .selectFrom('webhook_outbox')
      .selectAll()
      .where('endpoint_id', '=', endpointId)
      .where('message_id', '=', messageId)
      .orderBy('id', 'desc')
      .executeTakeFirst();
  }

  async recordAttempt(row: Omit<AttemptRow, 'id'>): Promise<void> {
    await this.db.insertInto('webhook_attempts').values(row).execute();
  }

  /** The attempt log of an endpoint, newest first. */
  async attempts(endpointId: string, limit: number): Promise<AttemptRow[]> {
    return this.db
      .selectFrom('webhook_attempts')
      .selectAll()
      .where('endpoint_id', '=', endpointId)
      .orderBy('id', 'desc')
      .limit(limit)
      .execute();
  }
}

/** The audit log's table: written once per state-changing request, never updated. */
import { sql, type Kysely, type Selectable } from 'kysely';
import type { AuditEventTable, Database } from './schema';

export type AuditRow = Omit<Selectable<AuditEventTable>, 'id'>;

/** Filters of the audit log (GET /v1/audit); every one given must match. */
export interface AuditFilter {
  before?: number;
  actor?: string;
  resource_type?: string;
  resource_id?: string;
  /** Exact, or a prefix ending in `*`. */
  action?: string;
  result?: 'success' | 'failure';
  status?: number;
  error_code?: string;
  request_id?: string;
  since?: string;
  until?: string;
}

export class AuditQueries {
  constructor(private readonly db: Kysely<Database>) {}

  async insert(event: AuditRow): Promise<void> {
    await this.db.insertInto('audit_events').values(event).execute();
  }

  async list(orgId: string, f: AuditFilter, limit: number): Promise<(AuditRow & { id: number })[]> {
    let q = this.db.selectFrom('audit_events').selectAll().where('org_id', '=', orgId);
    if (f.before !== undefined) q = q.where('id', '<', f.before);
    if (f.actor) q = q.where('actor', '=', f.actor);
    if (f.resource_type) q = q.where('resource_type', '=', f.resource_type);
    if (f.resource_id) q = q.where('resource_id', '=', f.resource_id);
    const prefix = f.action?.endsWith('*') ? f.action.slice(0, -1) : null;
    if (prefix !== null) q = q.where(sql<string>`substr(action, 1, ${prefix.length})`, '=', prefix);
    else if (f.action) q = q.where('action', '=', f.action);
    if (f.result === 'success') q = q.where('status', '<', 400);
    if (f.result === 'failure') q = q.where('status', '>=', 400);
    if (f.status !== undefined) q = q.where('status', '=', f.status);
    if (f.error_code) q = q.where('error_code', '=', f.error_code);
    if (f.request_id) q = q.where('request_id', '=', f.request_id);
    if (f.since) q = q.where('at', '>=', new Date(f.since).toISOString());
    if (f.until) q = q.where('at', '<', new Date(f.until).toISOString());
    return q.orderBy('id', 'desc').limit(limit).execute();
  }
}

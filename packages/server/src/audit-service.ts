/** The audit log: one event for every state-changing request (app.ts), and reading it back. */
import { AuditQueries, type AuditFilter, type AuditRow } from './store/audit';
import type { Store } from './store/store';

export class AuditService {
  private readonly queries: AuditQueries;

  constructor(store: Store) {
    this.queries = new AuditQueries(store.db);
  }

  record(event: AuditRow): Promise<void> {
    return this.queries.insert(event);
  }

  list(orgId: string, filter: AuditFilter, limit: number): Promise<(AuditRow & { id: number })[]> {
    return this.queries.list(orgId, filter, limit);
  }
}

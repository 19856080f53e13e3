/** The audit log: one event for every state-changing request (app.ts), and reading it back. */
import type { AuditFilter, AuditRow, Store } from './store/store';

export class AuditService {
  constructor(private readonly store: Store) {}

  record(event: AuditRow): Promise<void> {
    return this.store.audit(event);
  }

  list(orgId: string, filter: AuditFilter, limit: number): Promise<(AuditRow & { id: number })[]> {
    return this.store.auditEvents(orgId, filter, limit);
  }
}

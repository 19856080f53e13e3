/** The audit log of the caller's organisation, newest first, with filters. */
import type { AuditEvent, AuditQuery } from '@warren/protocol';
import { HttpClient } from './client';
import type { ConnectionOptions } from './config';

export interface AuditPage {
  items: AuditEvent[];
  /** Pass as `before` for the next page; null on the last page. */
  next_before: number | null;
}

export const Audit = {
  list(filter: AuditQuery = {}, opts: ConnectionOptions = {}): Promise<AuditPage> {
    return new HttpClient(opts).json('GET', '/v1/audit', { query: { ...filter } });
  },
};

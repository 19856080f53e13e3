/** The API's shapes, from the protocol package (types only: nothing of it is bundled). */
export type {
  AuditEvent,
  Database,
  DatabaseEvent,
  EgressEvent,
  FileInfo,
  Health,
  NetworkView,
  ProcessInfo,
  PtyInfo,
  PtyToken,
  Sandbox,
  SandboxMetrics,
  SandboxState,
  Snapshot,
  Template,
  UsageReport,
  UsageSample,
  Volume,
} from '@warren/protocol';

export interface Page<T> {
  items: T[];
  next_cursor?: string | null;
  next_before?: number | string | null;
}

export interface SandboxEvent {
  at: string;
  from_state: string | null;
  to_state: string;
  cause: string;
}

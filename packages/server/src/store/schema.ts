/** Table types of the store (Kysely). Times are ISO-8601 strings; JSON columns are text. */
import type { Generated } from 'kysely';

export interface OrganisationTable {
  id: string;
  name: string;
  created_at: string;
}

export interface ApiTokenTable {
  id: string;
  org_id: string;
  name: string;
  /** sha256 of the token; the token itself is never stored. */
  token_hash: string;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
  /** JSON array of scopes (see SCOPES in @warren/protocol). */
  scopes: string;
  /** `wrn_` and the first characters of the key, to recognise it; null for tokens from before keys. */
  prefix: string | null;
  /** Restriction to one sandbox. */
  sandbox_id: string | null;
  /** Restriction to sandboxes with these labels: JSON object, or null. */
  sandbox_labels: string | null;
  expires_at: string | null;
  /** The key that created this one; null for the install's admin token. */
  created_by: string | null;
}

/** The organisation of each template built through the API; templates without a row are official. */
export interface TemplateOwnerTable {
  name: string;
  org_id: string;
  created_at: string;
}

export interface SandboxTable {
  id: string;
  org_id: string;
  host_id: string;
  template: string;
  state: string;
  cpu: number;
  memory_mb: number;
  metadata: string;
  env: string;
  ttl_seconds: number;
  created_at: string;
  last_activity_at: string;
  expires_at: string;
  stopped_at: string | null;
  stop_reason: string | null;
  parent_id: string | null;
  snapshot_id: string | null;
  /** JSON array of ancestor ids, the root first and the parent last. */
  lineage: string;
  /** 1: never reaped by TTL; hibernated when idle instead. */
  persistent: number;
  idle_timeout_seconds: number;
  /** How the sandbox came from its parent: '' (none), 'memory' or 'disk'. */
  fork_kind: string;
  /** 1 when preview URLs need a preview token. */
  preview_auth: number;
  /** sha256 of the current preview token; the token itself is never stored. */
  preview_token_hash: string | null;
  /** JSON {policy, secrets}: the egress policy and bound secrets (see network.ts). */
  network: string | null;
  /** Null for sandboxes from before disk limits. */
  disk_mb: number | null;
  /** JSON array of the attachments ({ name, mount_path, read_only }). */
  volumes: string;
  /** A hibernated sandbox's image in the shared snapshot store (any host can restore it). */
  image_id: string | null;
}

export interface VolumeTable {
  id: string;
  org_id: string;
  name: string;
  host_id: string;
  size_mb: number;
  created_at: string;
}

/** Who holds a volume now; rows go when their sandbox stops. */
export interface VolumeAttachmentTable {
  volume_id: string;
  sandbox_id: string;
  mount_path: string;
  /** 1 or 0. */
  read_only: number;
  created_at: string;
}

export interface SnapshotTable {
  id: string;
  org_id: string;
  host_id: string;
  sandbox_id: string;
  template: string;
  cpu: number;
  memory_mb: number;
  env: string;
  size_bytes: number;
  parent_pause_ms: number;
  created_at: string;
  /** JSON array: the captured sandbox's ancestors (not the sandbox itself). */
  lineage: string;
  /** disk_mb of the captured sandbox: restores get at least as much, so its files fit. */
  disk_mb: number | null;
  network: string | null;
}

export interface EgressEventTable {
  id: Generated<number>;
  sandbox_id: string;
  at: string;
  protocol: string;
  host: string;
  port: number;
  address: string | null;
  decision: string;
  reason: string;
  bytes_out: number;
  bytes_in: number;
  duration_ms: number;
}

export interface SandboxEventTable {
  id: Generated<number>;
  sandbox_id: string;
  at: string;
  from_state: string | null;
  to_state: string;
  cause: string;
}

export interface AuditEventTable {
  id: Generated<number>;
  at: string;
  org_id: string | null;
  actor: string | null;
  action: string;
  resource_type: string | null;
  resource_id: string | null;
  status: number;
  error_code: string | null;
  request_id: string;
}

export interface DatabaseTable {
  id: string;
  org_id: string;
  label: string;
  state: string;
  host_id: string;
  sandbox_id: string;
  volume_id: string;
  cpu: number;
  memory_mb: number;
  disk_mb: number;
  password: string;
  scale_to_zero_seconds: number;
  archive_timeout_seconds: number;
  /** Raised by a restore onto a new volume: the archive fence. */
  epoch: number;
  parent_id: string | null;
  restored_to: string | null;
  metadata: string;
  created_at: string;
  last_archived_wal: string | null;
  last_archived_at: string | null;
  last_base_backup_at: string | null;
  last_base_backup_lsn: string | null;
  last_connection_at: string | null;
}

export interface DatabaseEventTable {
  id: Generated<number>;
  database_id: string;
  at: string;
  kind: string;
  message: string;
}

export interface DatabaseBackupTable {
  id: Generated<number>;
  database_id: string;
  epoch: number;
  /** Archive key of base.tar.gz. */
  key: string;
  start_lsn: string;
  at: string;
  size: number;
}

/**
 * Usage: what each sandbox is known by (kept when its record is purged) and
 * the last counters its host reported, from which the next sample counts.
 */
export interface UsageSandboxTable {
  sandbox_id: string;
  org_id: string;
  template: string;
  /** JSON object: the sandbox's labels when last sampled. */
  labels: string;
  last_at: string;
  last_started_at: string;
  last_cpu_seconds: number;
  last_memory_bytes: number;
  last_net_rx_bytes: number;
  last_net_tx_bytes: number;
}

/** One sample of a sandbox: gauges at `at`, the rest used in the interval that ends there. */
export interface UsageSampleTable {
  id: Generated<number>;
  sandbox_id: string;
  at: string;
  interval_seconds: number;
  cpu_seconds: number;
  memory_bytes: number;
  memory_gb_seconds: number;
  disk_bytes: number | null;
  net_rx_bytes: number;
  net_tx_bytes: number;
}

/** Usage per sandbox and hour (`hour` is its start), kept after the samples are pruned. */
export interface UsageHourTable {
  sandbox_id: string;
  hour: string;
  cpu_seconds: number;
  memory_gb_seconds: number;
  sandbox_seconds: number;
  disk_bytes_peak: number;
  net_rx_bytes: number;
  net_tx_bytes: number;
}

/** An organisation's quota overrides (JSON of QuotaOverrides); no row: the install defaults. */
export interface OrgQuotaTable {
  org_id: string;
  overrides: string;
  updated_at: string;
}

export interface WebhookEndpointTable {
  id: string;
  org_id: string;
  url: string;
  description: string;
  /** JSON array of event filters. */
  events: string;
  /** `whsec_<base64>`. */
  secret: string;
  /** The secret before the last rotation: it also signs until previous_secret_expires_at. */
  previous_secret: string | null;
  previous_secret_expires_at: string | null;
  disabled_at: string | null;
  disabled_reason: string | null;
  /** When the first of the current run of failed attempts was made. */
  failing_since: string | null;
  created_at: string;
  updated_at: string;
}

/** One message to one endpoint: pending until delivered, or failed once its retries are spent. */
export interface WebhookOutboxTable {
  id: Generated<number>;
  endpoint_id: string;
  message_id: string;
  event_type: string;
  /** The exact JSON body that is signed and sent. */
  payload: string;
  /** 'pending', 'delivered', 'failed' (retries spent) or 'abandoned' (endpoint disabled). */
  state: string;
  attempts: number;
  /** Epoch milliseconds. */
  next_attempt_at: number;
  created_at: string;
}

export interface WebhookAttemptTable {
  id: Generated<number>;
  endpoint_id: string;
  outbox_id: number;
  message_id: string;
  event_type: string;
  attempt: number;
  status_code: number | null;
  latency_ms: number;
  response: string;
  error: string | null;
  at: string;
}

/** A host agent that joined (several hosts, docs/multi-host.md). */
export interface HostTable {
  id: string;
  /** Where the control plane reaches the agent's HostApi. */
  url: string;
  /**
   * The credential issued at join: a secret the agent and the control planes
   * share. The agent presents it on heartbeats and the control plane calls
   * the agent's HostApi with it, so it is kept, not hashed (like any stored
   * service password, it is as safe as the store).
   */
  credential: string;
  /** active | draining | lost */
  state: string;
  /** Raised each time the host is fenced: what it owns, it owns under this epoch. */
  epoch: number;
  /** Epoch milliseconds; past it without a heartbeat, the host is lost. */
  lease_expires_at: number;
  joined_at: string;
  last_heartbeat_at: string | null;
  /** JSON HostCapacity of the last heartbeat. */
  capacity: string;
  /** JSON HostInfo and agent version of the last heartbeat. */
  info: string;
  state_reason: string;
}

export interface HostJoinTokenTable {
  token_hash: string;
  created_at: string;
  expires_at: number;
  used_at: string | null;
  host_id: string | null;
}

export interface Database {
  hosts: HostTable;
  host_join_tokens: HostJoinTokenTable;
  organisations: OrganisationTable;
  api_tokens: ApiTokenTable;
  template_owners: TemplateOwnerTable;
  sandboxes: SandboxTable;
  snapshots: SnapshotTable;
  volumes: VolumeTable;
  volume_attachments: VolumeAttachmentTable;
  sandbox_events: SandboxEventTable;
  audit_events: AuditEventTable;
  egress_events: EgressEventTable;
  databases: DatabaseTable;
  database_events: DatabaseEventTable;
  database_backups: DatabaseBackupTable;
  usage_sandboxes: UsageSandboxTable;
  usage_samples: UsageSampleTable;
  usage_hours: UsageHourTable;
  org_quotas: OrgQuotaTable;
  webhook_endpoints: WebhookEndpointTable;
  webhook_outbox: WebhookOutboxTable;
  webhook_attempts: WebhookAttemptTable;
}

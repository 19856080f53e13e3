/** The API views of sandbox and snapshot records. */
import type { Sandbox, SandboxState, Snapshot } from '@warren/protocol';
import { previewUrl } from '../preview/token';
import type { SandboxRecord, SnapshotRecord } from '../store/store';

export function sandboxView(r: SandboxRecord, previewTemplate?: string): Sandbox {
  return {
    id: r.id,
    org_id: r.org_id,
    template: r.template,
    state: r.state as SandboxState,
    cpu: r.cpu,
    memory_mb: r.memory_mb,
    disk_mb: r.disk_mb ?? 0,
    volumes: r.volumes,
    metadata: r.metadata,
    env_keys: Object.keys(r.env),
    ttl_seconds: r.ttl_seconds,
    host_id: r.host_id,
    created_at: r.created_at,
    last_activity_at: r.last_activity_at,
    expires_at: r.expires_at,
    stopped_at: r.stopped_at,
    stop_reason: r.stop_reason,
    parent_id: r.parent_id,
    snapshot_id: r.snapshot_id,
    lineage: r.lineage,
    fork_kind: r.fork_kind === 'memory' || r.fork_kind === 'disk' ? r.fork_kind : null,
    persistent: r.persistent === 1,
    idle_timeout_seconds: r.idle_timeout_seconds,
    preview_url: previewUrl(previewTemplate, r.id),
    preview_auth: r.preview_auth === 1,
  };
}

/** The API view of a snapshot: its host and the parent's env stay internal. */
export function snapshotView(r: SnapshotRecord): Snapshot {
  const { host_id, env, lineage, network, disk_mb, ...api } = r;
  return api;
}

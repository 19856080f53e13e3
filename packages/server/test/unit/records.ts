/** A sandbox record for store and sweep tests: running, 60 s TTL, no labels, unless `over` says. */
import { newId } from '@warren/protocol';
import type { SandboxRecord } from '../../src/store/store';

export function sandboxRecord(
  over: Partial<SandboxRecord> & { created_at: string },
): SandboxRecord {
  return {
    id: newId('sandbox'),
    org_id: 'org_a',
    host_id: 'host_test',
    template: 'fake',
    state: 'running',
    cpu: 1,
    memory_mb: 128,
    metadata: {},
    env: {},
    ttl_seconds: 60,
    last_activity_at: over.created_at,
    expires_at: over.created_at,
    stopped_at: null,
    stop_reason: null,
    parent_id: null,
    snapshot_id: null,
    lineage: [],
    persistent: 0,
    idle_timeout_seconds: 300,
    fork_kind: '',
    preview_auth: 0,
    preview_token_hash: null,
    network: { policy: { mode: 'none' }, secrets: [] },
    disk_mb: 1024,
    volumes: [],
    image_id: null,
    ...over,
  };
}

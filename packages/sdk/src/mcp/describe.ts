/** What tools return about sandboxes: the fields a model needs, not the whole record. */
import type { Sandbox as SandboxInfo } from '@warren/protocol';
import { z } from 'zod';

export const sandboxId = z
  .string()
  .min(1)
  .describe(
    'Sandbox id as returned by create_sandbox or list_sandboxes, e.g. "sbx_0123456789abcdef".',
  );

export const labels = z
  .record(z.string().min(1).max(63), z.string().max(256))
  .describe(
    'Free-form string labels (key -> value) kept on the sandbox; list_sandboxes filters by them.',
  );

export const ttlSeconds = z
  .number()
  .int()
  .min(1)
  .max(7 * 24 * 3600)
  .describe(
    'Seconds without API activity after which the sandbox is destroyed. Default: the server setting (usually 3600).',
  );

export function sandboxSummary(s: SandboxInfo): Record<string, unknown> {
  return {
    id: s.id,
    state: s.state,
    template: s.template,
    cpu: s.cpu,
    memory_mb: s.memory_mb,
    disk_mb: s.disk_mb,
    ttl_seconds: s.ttl_seconds,
    expires_at: s.expires_at,
    labels: s.metadata,
    created_at: s.created_at,
    ...(s.parent_id !== null && { parent_id: s.parent_id }),
    ...(s.snapshot_id !== null && { snapshot_id: s.snapshot_id }),
    ...(s.preview_token !== undefined && { preview_token: s.preview_token }),
  };
}

/** REST schemas of organisation quotas: limits, per-organisation overrides and current use. */
import { Type, type Static } from '@sinclair/typebox';
import { Strict } from './strict';

const limit = (description: string) =>
  Type.Union([Type.Integer({ minimum: 0 }), Type.Null()], {
    description: `${description} Null: unlimited.`,
  });

/** The quota names, as they appear in QUOTA_EXCEEDED details (`quota`). */
export const QUOTA_NAMES = [
  'sandboxes',
  'memory_mb',
  'disk_mb',
  'databases',
  'snapshot_bytes',
  'creates',
] as const;
export type QuotaName = (typeof QUOTA_NAMES)[number];

export const QuotaLimits = Type.Object({
  sandboxes: limit('Live sandboxes at once (every state but stopped; database servers excluded).'),
  memory_mb: limit('Sum of memory_mb of live sandboxes, database servers included.'),
  disk_mb: limit('Sum of disk_mb of live sandboxes, volumes and databases.'),
  databases: limit('Databases.'),
  snapshot_bytes: limit(
    'Bytes of stored snapshots; a snapshot is refused once the total reaches it.',
  ),
  creates_burst: limit(
    'Sandbox creates in a burst (the token bucket size; default: one second of creates_per_second, at least 1).',
  ),
  creates_per_second: Type.Union([Type.Number({ exclusiveMinimum: 0 }), Type.Null()], {
    description: 'Sandbox creates refilled per second. Null: no create rate limit.',
  }),
});
export type QuotaLimits = Static<typeof QuotaLimits>;

/** PUT body: the organisation's overrides; a field left out takes the install default. */
export const QuotaOverrides = Type.Partial(QuotaLimits, Strict);
export type QuotaOverrides = Static<typeof QuotaOverrides>;

export const QuotaUsage = Type.Object({
  sandboxes: Type.Integer(),
  memory_mb: Type.Integer(),
  disk_mb: Type.Integer(),
  databases: Type.Integer(),
  snapshot_bytes: Type.Integer(),
  creates_available: Type.Union([Type.Number(), Type.Null()], {
    description: 'Tokens left in the create bucket; null without a create rate limit.',
  }),
});
export type QuotaUsage = Static<typeof QuotaUsage>;

export const OrganisationQuotas = Type.Object({
  org_id: Type.String(),
  limits: QuotaLimits,
  overrides: QuotaOverrides,
  usage: QuotaUsage,
});
export type OrganisationQuotas = Static<typeof OrganisationQuotas>;

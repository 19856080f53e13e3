/** REST schema of the health answer. */
import { Type, type Static } from '@sinclair/typebox';

export const Health = Type.Object({
  status: Type.Literal('ok'),
  version: Type.String(),
  runtime: Type.Object({
    driver: Type.String(),
    version: Type.String(),
    /** How this host copies a volume (a database branch): sharing blocks, or copying them. */
    volume_clone: Type.Union([Type.Literal('reflink'), Type.Literal('copy')]),
  }),
  hosts: Type.Array(
    Type.Object({
      id: Type.String(),
      memory_budget_mb: Type.Integer(),
      memory_reserved_mb: Type.Integer(),
      sandboxes: Type.Integer(),
    }),
  ),
  uptime_seconds: Type.Number(),
  /**
   * Whether this control plane runs the install's shared background work
   * (always with SQLite; with several on one PostgreSQL store, one of them).
   */
  leader: Type.Boolean(),
});
export type Health = Static<typeof Health>;

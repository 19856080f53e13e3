/** REST schema of the health answer. */
import { Type, type Static } from '@sinclair/typebox';

export const Health = Type.Object({
  status: Type.Literal('ok'),
  version: Type.String(),
  runtime: Type.Object({ driver: Type.String(), version: Type.String() }),
  hosts: Type.Array(
    Type.Object({
      id: Type.String(),
      memory_budget_mb: Type.Integer(),
      memory_reserved_mb: Type.Integer(),
      sandboxes: Type.Integer(),
    }),
  ),
  uptime_seconds: Type.Number(),
});
export type Health = Static<typeof Health>;

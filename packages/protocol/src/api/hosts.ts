/**
 * REST schemas of hosts: the host agents that joined this control plane
 * (docs/multi-host.md). Admins make join tokens and see, drain and remove
 * hosts; agents join with a token and then renew their lease by heartbeat.
 */
import { Type, type Static } from '@sinclair/typebox';
import { Strict } from './strict';

const HostState = Type.Union(
  [Type.Literal('active'), Type.Literal('draining'), Type.Literal('lost')],
  { description: 'active: takes new sandboxes; draining: takes none; lost: its lease ran out.' },
);

export const HostJoinTokenRequest = Type.Object(
  {
    ttl_seconds: Type.Optional(
      Type.Integer({ minimum: 60, maximum: 7 * 86400, description: 'Default 3600.' }),
    ),
  },
  Strict,
);
export type HostJoinTokenRequest = Static<typeof HostJoinTokenRequest>;

export const HostJoinToken = Type.Object({
  token: Type.String({ description: 'Shown once; good for one join.' }),
  expires_at: Type.String(),
});
export type HostJoinToken = Static<typeof HostJoinToken>;

export const HostJoinRequest = Type.Object(
  {
    token: Type.String({ minLength: 1, maxLength: 200 }),
    host_id: Type.Optional(
      Type.String({ pattern: '^[a-z0-9][a-z0-9_-]{0,47}$', description: 'Default: a new id.' }),
    ),
  },
  Strict,
);
export type HostJoinRequest = Static<typeof HostJoinRequest>;

export const HostJoinResponse = Type.Object({
  host_id: Type.String(),
  credential: Type.String({
    description: 'Shown once: the agent presents it to the control plane and is called with it.',
  }),
  epoch: Type.Integer(),
  lease_seconds: Type.Integer(),
});
export type HostJoinResponse = Static<typeof HostJoinResponse>;

const Capacity = Type.Object({
  memory_budget_mb: Type.Number(),
  memory_reserved_mb: Type.Number(),
  memory_overcommit: Type.Optional(Type.Number()),
  memory_start_mb: Type.Optional(Type.Number()),
  sandboxes: Type.Integer(),
  memory_used_mb: Type.Optional(Type.Number()),
});

export const HostHeartbeat = Type.Object(
  {
    epoch: Type.Integer(),
    url: Type.String({ minLength: 1, maxLength: 500, description: "The agent's HostApi URL." }),
    capacity: Capacity,
    version: Type.String({ maxLength: 100 }),
    /** Templates ready on the host. */
    templates: Type.Array(Type.String({ maxLength: 100 }), { maxItems: 1000 }),
  },
  Strict,
);
export type HostHeartbeat = Static<typeof HostHeartbeat>;

export const HostHeartbeatResponse = Type.Object({
  state: HostState,
  epoch: Type.Integer(),
  lease_expires_at: Type.String(),
});
export type HostHeartbeatResponse = Static<typeof HostHeartbeatResponse>;

export const Host = Type.Object({
  id: Type.String(),
  url: Type.String(),
  state: HostState,
  state_reason: Type.String(),
  /** True for the agent inside the control plane's own process. */
  local: Type.Boolean(),
  connected: Type.Boolean(),
  epoch: Type.Integer(),
  joined_at: Type.String(),
  last_heartbeat_at: Type.Union([Type.String(), Type.Null()]),
  lease_expires_at: Type.String(),
  version: Type.String(),
  capacity: Type.Union([Capacity, Type.Null()]),
  templates: Type.Array(Type.String()),
  /** Live sandboxes (every state but stopped) the host owns. */
  sandboxes: Type.Integer(),
});
export type Host = Static<typeof Host>;

export const HostList = Type.Object({ hosts: Type.Array(Host) });
export type HostList = Static<typeof HostList>;

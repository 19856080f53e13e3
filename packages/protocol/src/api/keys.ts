/** REST schemas of organisations and scoped API keys. */
import { Type, type Static } from '@sinclair/typebox';
import { Labels } from './common';
import { Strict } from './strict';

/**
 * What a key may do, as resource:action. `admin` implies every other scope;
 * `keys` lets a key create keys no wider than itself and revoke the ones it made.
 */
export const SCOPES = [
  'sandboxes:read',
  'sandboxes:write',
  'exec',
  'files',
  'snapshots',
  'templates',
  'volumes',
  'databases',
  'audit',
  'keys',
  'webhooks',
  'admin',
] as const;
export type Scope = (typeof SCOPES)[number];

export const ScopeName = Type.Unsafe<Scope>({ type: 'string', enum: [...SCOPES] });

export const CreateKeyRequest = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 100 }),
    scopes: Type.Array(ScopeName, { minItems: 1, maxItems: SCOPES.length, uniqueItems: true }),
    expires_at: Type.Optional(
      Type.String({ format: 'date-time', description: 'When the key stops working.' }),
    ),
    ttl_seconds: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 10 * 365 * 86400,
        description: 'Lifetime from now; not together with `expires_at`.',
      }),
    ),
    sandbox_id: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 64,
        description: 'Restricts the key to this one sandbox; such a key cannot create sandboxes.',
      }),
    ),
    /** Restricts the key to sandboxes whose metadata has all these labels; its creates must carry them. */
    sandbox_labels: Type.Optional(Labels),
    org_id: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 64,
        description: "Another organisation's key: only for the install's admin.",
      }),
    ),
  },
  Strict,
);
export type CreateKeyRequest = Static<typeof CreateKeyRequest>;

export const ApiKey = Type.Object({
  id: Type.String({ examples: ['tok_0123456789abcdef'] }),
  org_id: Type.String(),
  name: Type.String(),
  prefix: Type.String({ description: 'The first characters of the key, to recognise it.' }),
  scopes: Type.Array(Type.String()),
  sandbox_id: Type.Union([Type.String(), Type.Null()]),
  sandbox_labels: Type.Union([Labels, Type.Null()]),
  created_at: Type.String({ format: 'date-time' }),
  created_by: Type.Union([Type.String(), Type.Null()]),
  expires_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  last_used_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
});
export type ApiKey = Static<typeof ApiKey>;

export const CreatedKey = Type.Intersect([
  ApiKey,
  Type.Object({ key: Type.String({ description: 'The key itself; shown only in this answer.' }) }),
]);
export type CreatedKey = Static<typeof CreatedKey>;

export const KeyList = Type.Object({ items: Type.Array(ApiKey) });

export const CreateOrganisationRequest = Type.Object(
  { name: Type.String({ minLength: 1, maxLength: 100 }) },
  Strict,
);
export type CreateOrganisationRequest = Static<typeof CreateOrganisationRequest>;

export const Organisation = Type.Object({
  id: Type.String({ examples: ['org_0123456789abcdef'] }),
  name: Type.String(),
  created_at: Type.String({ format: 'date-time' }),
});
export type Organisation = Static<typeof Organisation>;

export const OrganisationList = Type.Object({ items: Type.Array(Organisation) });

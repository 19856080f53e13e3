/** The audit log: one event per state-changing request, read back with filters. */
import { Type, type Static } from '@sinclair/typebox';

export const AuditEvent = Type.Object({
  id: Type.Integer({ description: 'Sequence number; pass it as `before` to page on' }),
  at: Type.String(),
  org_id: Type.Union([Type.String(), Type.Null()]),
  actor: Type.Union([Type.String(), Type.Null()]),
  action: Type.String(),
  resource_type: Type.Union([Type.String(), Type.Null()]),
  resource_id: Type.Union([Type.String(), Type.Null()]),
  status: Type.Integer(),
  error_code: Type.Union([Type.String(), Type.Null()]),
  request_id: Type.String(),
});

const Text = (description: string) => Type.String({ minLength: 1, maxLength: 200, description });

export const AuditQuery = Type.Object(
  {
    limit: Type.Integer({ minimum: 1, maximum: 1000, default: 100 }),
    before: Type.Optional(Type.Integer({ minimum: 1, description: 'Events older than this id' })),
    actor: Type.Optional(Text('The acting key id or JWT subject')),
    resource_type: Type.Optional(Text('sandbox, snapshot, template, volume, database, key, ...')),
    resource_id: Type.Optional(Text('The resource id')),
    action: Type.Optional(Text('Exact action (`POST /v1/sandboxes`) or a prefix ending in `*`')),
    result: Type.Optional(
      Type.Union([Type.Literal('success'), Type.Literal('failure')], {
        description: 'success: status below 400; failure: 400 and above',
      }),
    ),
    status: Type.Optional(Type.Integer({ minimum: 100, maximum: 599 })),
    error_code: Type.Optional(Text('A Warren error code, e.g. QUOTA_EXCEEDED')),
    request_id: Type.Optional(Text('The x-request-id of the call')),
    org_id: Type.Optional(
      Text(
        "Another organisation's events: only for the install's admin (an `admin` key of `org_default`); anyone else naming an organisation not their own gets 404 ORGANISATION_NOT_FOUND",
      ),
    ),
    since: Type.Optional(Type.String({ format: 'date-time', description: 'At or after' })),
    until: Type.Optional(Type.String({ format: 'date-time', description: 'Before' })),
  },
  { additionalProperties: false },
);

export type AuditEvent = Static<typeof AuditEvent>;
export type AuditQuery = Partial<Static<typeof AuditQuery>>;

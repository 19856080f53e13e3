/** REST schemas of webhook endpoints, their secrets and their delivery log. */
import { Type, type Static } from '@sinclair/typebox';
import { Strict } from './strict';

/** Every event type Warren emits; filters name these, a `prefix.*` of them, or `*`. */
export const WEBHOOK_EVENT_TYPES = [
  'sandbox.created',
  'sandbox.state_changed',
  'snapshot.created',
  'template.built',
  'template.failed',
  'database.created',
  'database.restored',
  'database.archive_lag_exceeded',
  'database.archive_lag_recovered',
  'quota.exceeded',
] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

const EventFilters = Type.Array(Type.String({ minLength: 1, maxLength: 100 }), {
  minItems: 1,
  maxItems: 50,
  uniqueItems: true,
  description:
    'Event types to receive: exact (`database.created`), a family (`sandbox.*`) or `*` (all, the default).',
});
const Url = Type.String({
  minLength: 1,
  maxLength: 2000,
  description: 'http:// or https:// URL the events are POSTed to.',
});
const Description = Type.String({ maxLength: 500 });

export const CreateWebhookRequest = Type.Object(
  { url: Url, events: Type.Optional(EventFilters), description: Type.Optional(Description) },
  Strict,
);
export type CreateWebhookRequest = Static<typeof CreateWebhookRequest>;

export const UpdateWebhookRequest = Type.Object(
  {
    url: Type.Optional(Url),
    events: Type.Optional(EventFilters),
    description: Type.Optional(Description),
    enabled: Type.Optional(
      Type.Boolean({
        description: 'true re-enables an endpoint Warren disabled; false pauses it.',
      }),
    ),
  },
  Strict,
);
export type UpdateWebhookRequest = Static<typeof UpdateWebhookRequest>;

export const WebhookEndpoint = Type.Object({
  id: Type.String(),
  url: Type.String(),
  description: Type.String(),
  events: Type.Array(Type.String()),
  enabled: Type.Boolean(),
  disabled_at: Type.Union([Type.String(), Type.Null()]),
  disabled_reason: Type.Union([Type.String(), Type.Null()]),
  /** Since when every attempt has failed; null while deliveries succeed. */
  failing_since: Type.Union([Type.String(), Type.Null()]),
  /** Until when the previous secret also signs (after a rotation). */
  previous_secret_expires_at: Type.Union([Type.String(), Type.Null()]),
  created_at: Type.String(),
  updated_at: Type.String(),
});
export type WebhookEndpoint = Static<typeof WebhookEndpoint>;

export const WebhookEndpointWithSecret = Type.Composite([
  WebhookEndpoint,
  Type.Object({
    secret: Type.String({
      description: '`whsec_<base64>`: shown once; verify signatures with it.',
    }),
  }),
]);
export type WebhookEndpointWithSecret = Static<typeof WebhookEndpointWithSecret>;

export const WebhookEndpointList = Type.Object({ items: Type.Array(WebhookEndpoint) });

export const WebhookDelivery = Type.Object({
  message_id: Type.String({ description: 'The webhook-id header: the same on every attempt.' }),
  event_type: Type.String(),
  attempt: Type.Integer({ description: '1 for the first attempt of a (re)delivery.' }),
  status_code: Type.Union([Type.Integer(), Type.Null()]),
  latency_ms: Type.Integer(),
  response: Type.String({ description: 'The first 500 bytes of the response body.' }),
  error: Type.Union([Type.String(), Type.Null()]),
  delivered: Type.Boolean(),
  at: Type.String(),
});
export type WebhookDelivery = Static<typeof WebhookDelivery>;

export const WebhookDeliveryList = Type.Object({ items: Type.Array(WebhookDelivery) });

export const WebhookDeliveriesQuery = Type.Object(
  { limit: Type.Integer({ minimum: 1, maximum: 500, default: 100 }) },
  Strict,
);

export const WebhookParams = Type.Object(
  { id: Type.String({ minLength: 1, maxLength: 64 }) },
  Strict,
);
export const WebhookMessageParams = Type.Object(
  {
    id: Type.String({ minLength: 1, maxLength: 64 }),
    message_id: Type.String({ minLength: 1, maxLength: 64 }),
  },
  Strict,
);

export const RedeliverResult = Type.Object({
  endpoint_id: Type.String(),
  message_id: Type.String(),
  state: Type.Literal('pending'),
});

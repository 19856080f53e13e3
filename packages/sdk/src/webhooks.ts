/** Webhook endpoints of the organisation, their delivery log and redelivery. */
import type {
  CreateWebhookRequest,
  UpdateWebhookRequest,
  WebhookDelivery,
  WebhookEndpoint,
  WebhookEndpointWithSecret,
} from '@warren/protocol';
import { HttpClient } from './client';
import type { ConnectionOptions } from './config';

export { WEBHOOK_EVENT_TYPES } from '@warren/protocol';

const path = (id: string) => `/v1/webhooks/${encodeURIComponent(id)}`;

export const Webhooks = {
  /** Adds an endpoint; the answer's `secret` (whsec_...) is shown only here. */
  create(
    url: string,
    o: { events?: string[]; description?: string } = {},
    opts: ConnectionOptions = {},
  ): Promise<WebhookEndpointWithSecret> {
    const json: CreateWebhookRequest = { url, ...o };
    return new HttpClient(opts).json('POST', '/v1/webhooks', { json });
  },

  async list(opts: ConnectionOptions = {}): Promise<WebhookEndpoint[]> {
    return (await new HttpClient(opts).json<{ items: WebhookEndpoint[] }>('GET', '/v1/webhooks'))
      .items;
  },

  get(id: string, opts: ConnectionOptions = {}): Promise<WebhookEndpoint> {
    return new HttpClient(opts).json('GET', path(id));
  },

  /** Changes url, events or description; `enabled: true` re-enables a disabled endpoint. */
  update(
    id: string,
    patch: UpdateWebhookRequest,
    opts: ConnectionOptions = {},
  ): Promise<WebhookEndpoint> {
    return new HttpClient(opts).json('PATCH', path(id), { json: patch });
  },

  async delete(id: string, opts: ConnectionOptions = {}): Promise<void> {
    await new HttpClient(opts).json('DELETE', path(id));
  },

  /** A new secret; the previous one keeps signing beside it for the grace period. */
  rotateSecret(id: string, opts: ConnectionOptions = {}): Promise<WebhookEndpointWithSecret> {
    return new HttpClient(opts).json('POST', `${path(id)}/rotate-secret`);
  },

  /** Delivery attempts, newest first. */
  async deliveries(
    id: string,
    o: { limit?: number } = {},
    opts: ConnectionOptions = {},
  ): Promise<WebhookDelivery[]> {
    const q = o.limit !== undefined ? `?limit=${o.limit}` : '';
    return (
      await new HttpClient(opts).json<{ items: WebhookDelivery[] }>(
        'GET',
        `${path(id)}/deliveries${q}`,
      )
    ).items;
  },

  /** Sends a message to the endpoint again (same webhook-id), with fresh retries. */
  redeliver(
    id: string,
    messageId: string,
    opts: ConnectionOptions = {},
  ): Promise<{ endpoint_id: string; message_id: string; state: 'pending' }> {
    return new HttpClient(opts).json(
      'POST',
      `${path(id)}/deliveries/${encodeURIComponent(messageId)}/redeliver`,
    );
  },
};

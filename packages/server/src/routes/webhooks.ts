import type { FastifyPluginAsync } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import {
  CreateWebhookRequest,
  RedeliverResult,
  UpdateWebhookRequest,
  WebhookDeliveriesQuery,
  WebhookDeliveryList,
  WebhookEndpoint,
  WebhookEndpointList,
  WebhookEndpointWithSecret,
  WebhookMessageParams,
  WebhookParams,
} from '@warren/protocol';
import type { AppContext } from '../context';
import { NoContent, errors } from './responses';

export const webhookRoutes =
  (ctx: AppContext): FastifyPluginAsync =>
  async (fastify) => {
    const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
    const tags = ['webhooks'];
    const wh = ctx.webhooks;

    app.post(
      '/v1/webhooks',
      {
        schema: {
          tags,
          summary: 'Add a webhook endpoint; the answer carries its signing secret, shown once',
          body: CreateWebhookRequest,
          response: { 201: WebhookEndpointWithSecret, ...errors },
        },
      },
      async (req, reply) => {
        const ep = await wh.create(req.principal!.orgId, req.body);
        req.auditResource = { type: 'webhook', id: ep.id };
        return reply.status(201).send(ep);
      },
    );

    app.get(
      '/v1/webhooks',
      {
        schema: {
          tags,
          summary: 'The organisation’s webhook endpoints',
          response: { 200: WebhookEndpointList, ...errors },
        },
      },
      async (req) => ({ items: await wh.list(req.principal!.orgId) }),
    );

    app.get(
      '/v1/webhooks/:id',
      {
        schema: {
          tags,
          summary: 'A webhook endpoint, with why it was disabled if it was',
          params: WebhookParams,
          response: { 200: WebhookEndpoint, ...errors },
        },
      },
      async (req) => wh.get(req.principal!.orgId, req.params.id),
    );

    app.patch(
      '/v1/webhooks/:id',
      {
        schema: {
          tags,
          summary: 'Change the URL, filters or description; `enabled: true` re-enables it',
          params: WebhookParams,
          body: UpdateWebhookRequest,
          response: { 200: WebhookEndpoint, ...errors },
        },
      },
      async (req) => {
        req.auditResource = { type: 'webhook', id: req.params.id };
        return wh.update(req.principal!.orgId, req.params.id, req.body);
      },
    );

    app.delete(
      '/v1/webhooks/:id',
      {
        schema: {
          tags,
          summary: 'Remove a webhook endpoint, its queue and its delivery log',
          params: WebhookParams,
          response: { 204: NoContent, ...errors },
        },
      },
      async (req, reply) => {
        req.auditResource = { type: 'webhook', id: req.params.id };
        await wh.remove(req.principal!.orgId, req.params.id);
        return reply.status(204).send(null);
      },
    );

    app.post(
      '/v1/webhooks/:id/rotate-secret',
      {
        schema: {
          tags,
          summary: 'A new signing secret; the previous one also signs for a grace period (24 h)',
          params: WebhookParams,
          response: { 200: WebhookEndpointWithSecret, ...errors },
        },
      },
      async (req) => {
        req.auditResource = { type: 'webhook', id: req.params.id };
        return wh.rotateSecret(req.principal!.orgId, req.params.id);
      },
    );

    app.get(
      '/v1/webhooks/:id/deliveries',
      {
        schema: {
          tags,
          summary: 'Delivery attempts to the endpoint, newest first',
          params: WebhookParams,
          querystring: WebhookDeliveriesQuery,
          response: { 200: WebhookDeliveryList, ...errors },
        },
      },
      async (req) => ({
        items: await wh.deliveries(req.principal!.orgId, req.params.id, req.query.limit),
      }),
    );

    app.post(
      '/v1/webhooks/:id/deliveries/:message_id/redeliver',
      {
        schema: {
          tags,
          summary: 'Send a message to the endpoint again (same webhook-id), with fresh retries',
          params: WebhookMessageParams,
          response: { 202: RedeliverResult, ...errors },
        },
      },
      async (req, reply) => {
        req.auditResource = { type: 'webhook', id: req.params.id };
        const r = await wh.redeliver(req.principal!.orgId, req.params.id, req.params.message_id);
        return reply.status(202).send(r);
      },
    );
  };

/** Organisations and scoped API keys: create, list, revoke. */
import type { FastifyPluginAsync } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import {
  CreateKeyRequest,
  CreateOrganisationRequest,
  CreatedKey,
  IdParams,
  KeyList,
  Organisation,
  OrganisationList,
  type CreateKeyRequest as CreateKeyRequestT,
} from '@warren/protocol';
import type { AppContext } from '../context';
import { NoContent, errors } from './responses';

export const keyRoutes =
  (ctx: AppContext): FastifyPluginAsync =>
  async (fastify) => {
    const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

    app.post(
      '/v1/keys',
      {
        schema: {
          tags: ['keys'],
          summary:
            'Create an API key with scopes, an optional expiry and an optional sandbox restriction; the key is shown only here',
          body: CreateKeyRequest,
          response: { 201: CreatedKey, ...errors },
        },
      },
      async (req, reply) => {
        const key = await ctx.keys.create(req.principal!, req.body as CreateKeyRequestT);
        req.auditResource = { type: 'key', id: key.id };
        return reply.status(201).send(key);
      },
    );

    app.get(
      '/v1/keys',
      {
        schema: {
          tags: ['keys'],
          summary:
            'List keys (no secrets): admin keys see all of the organisation, others their own and those they made',
          response: { 200: KeyList, ...errors },
        },
      },
      async (req) => ({ items: await ctx.keys.list(req.principal!) }),
    );

    app.delete(
      '/v1/keys/:id',
      {
        schema: {
          tags: ['keys'],
          summary: 'Revoke a key; it stops working at once',
          params: IdParams,
          response: { 204: NoContent, ...errors },
        },
      },
      async (req, reply) => {
        req.auditResource = { type: 'key', id: req.params.id };
        await ctx.keys.revoke(req.principal!, req.params.id);
        return reply.status(204).send(null);
      },
    );

    app.post(
      '/v1/orgs',
      {
        schema: {
          tags: ['keys'],
          summary: "Create an organisation (an admin key of the install's organisation only)",
          body: CreateOrganisationRequest,
          response: { 201: Organisation, ...errors },
        },
      },
      async (req, reply) => {
        const org = await ctx.keys.createOrganisation(req.principal!, req.body);
        req.auditResource = { type: 'organisation', id: org.id };
        return reply.status(201).send(org);
      },
    );

    app.get(
      '/v1/orgs',
      {
        schema: {
          tags: ['keys'],
          summary: "Organisations: your own, or all of them for the install's admin",
          response: { 200: OrganisationList, ...errors },
        },
      },
      async (req) => ({ items: await ctx.keys.listOrganisations(req.principal!) }),
    );
  };

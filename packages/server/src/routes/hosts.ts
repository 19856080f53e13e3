/**
 * Hosts (docs/multi-host.md): the install's admin makes join tokens and
 * lists, drains and removes hosts; agents join with a token and heartbeat
 * with the credential they got, presented as a bearer token (these two
 * routes take no API key).
 */
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import {
  Host,
  HostHeartbeat,
  HostHeartbeatResponse,
  HostJoinRequest,
  HostJoinResponse,
  HostJoinToken,
  HostJoinTokenRequest,
  HostList,
  IdParams,
  WarrenError,
} from '@warren/protocol';
import { DEFAULT_ORG, type Principal } from '../auth';
import type { AppContext } from '../context';
import { NoContent, errors } from './responses';

function installAdmin(p: Principal): void {
  if (!p.installAdmin)
    throw new WarrenError(
      'MISSING_SCOPE',
      `hosts are managed with an admin key of ${DEFAULT_ORG}: this key lacks the scope admin there`,
      { missing_scope: 'admin' },
    );
}

function bearer(req: FastifyRequest): string {
  const m = /^Bearer (\S+)$/.exec(req.headers.authorization ?? '');
  if (!m)
    throw new WarrenError('UNAUTHORIZED', 'a host credential is required (Authorization: Bearer)');
  return m[1]!;
}

export const hostRoutes =
  (ctx: AppContext): FastifyPluginAsync =>
  async (fastify) => {
    const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
    const hosts = ctx.hosts;

    app.post(
      '/v1/hosts/join-tokens',
      {
        schema: {
          tags: ['hosts'],
          summary: 'A one-use token an agent joins with (`warren agent --join-token`)',
          body: HostJoinTokenRequest,
          response: { 201: HostJoinToken, ...errors },
        },
      },
      async (req, reply) => {
        installAdmin(req.principal!);
        const token = await hosts.createJoinToken(req.body?.ttl_seconds);
        req.auditResource = { type: 'host', id: 'join-token' };
        return reply.code(201).send(token);
      },
    );

    app.post(
      '/v1/hosts/join',
      {
        schema: {
          tags: ['hosts'],
          summary: 'An agent joins with a join token and gets its host id and credential',
          body: HostJoinRequest,
          response: { 201: HostJoinResponse, ...errors },
        },
      },
      async (req, reply) => reply.code(201).send(await hosts.join(req.body)),
    );

    app.post(
      '/v1/hosts/:id/heartbeat',
      {
        // Every agent, every few seconds: logged only when it fails.
        logLevel: 'warn',
        schema: {
          tags: ['hosts'],
          summary: 'An agent renews its lease and reports its address, capacity and templates',
          params: IdParams,
          body: HostHeartbeat,
          response: { 200: HostHeartbeatResponse, ...errors },
        },
      },
      async (req) => hosts.heartbeat(req.params.id, bearer(req), req.body),
    );

    app.get(
      '/v1/hosts',
      {
        schema: {
          tags: ['hosts'],
          summary: 'Every host: state, lease, capacity, templates and sandboxes',
          response: { 200: HostList, ...errors },
        },
      },
      async (req) => {
        installAdmin(req.principal!);
        return { hosts: await hosts.list() };
      },
    );

    app.get(
      '/v1/hosts/:id',
      {
        schema: {
          tags: ['hosts'],
          summary: 'One host',
          params: IdParams,
          response: { 200: Host, ...errors },
        },
      },
      async (req) => {
        installAdmin(req.principal!);
        return hosts.get(req.params.id);
      },
    );

    app.post(
      '/v1/hosts/:id/drain',
      {
        schema: {
          tags: ['hosts'],
          summary:
            'Stops placing new sandboxes on a host and moves its persistent sandboxes to other hosts (progress in state_reason)',
          params: IdParams,
          response: { 200: Host, ...errors },
        },
      },
      async (req) => {
        installAdmin(req.principal!);
        const host = await hosts.drain(req.params.id);
        req.auditResource = { type: 'host', id: req.params.id };
        return host;
      },
    );

    app.delete(
      '/v1/hosts/:id',
      {
        schema: {
          tags: ['hosts'],
          summary: 'Forgets a host that owns no live sandbox, or was lost',
          params: IdParams,
          response: { 204: NoContent, ...errors },
        },
      },
      async (req, reply) => {
        installAdmin(req.principal!);
        await hosts.remove(req.params.id);
        req.auditResource = { type: 'host', id: req.params.id };
        return reply.status(204).send(null);
      },
    );
  };

import type { FastifyPluginAsync } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import {
  CreateSandboxRequest,
  DeleteResult,
  IdParams,
  ListSandboxesQuery,
  Sandbox,
  SandboxEventList,
  SandboxList,
  UpdateSandboxRequest,
  WarrenError,
} from '@warren/protocol';
import { DEFAULT_ORG } from '../auth';
import type { AppContext } from '../context';
import { checkSnapshotAccess, listFilter } from '../keys/access';
import { checkCreate, checkLabels } from '../keys/restriction';
import { errors } from './responses';

export const sandboxRoutes =
  (ctx: AppContext): FastifyPluginAsync =>
  async (fastify) => {
    const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

    app.post(
      '/v1/sandboxes',
      {
        schema: {
          tags: ['sandboxes'],
          summary: 'Create a sandbox (restores the template snapshot)',
          body: CreateSandboxRequest,
          response: { 201: Sandbox, ...errors },
        },
      },
      async (req, reply) => {
        const p = req.principal!;
        checkCreate(p.restriction, req.body.metadata);
        if (req.body.host_id !== undefined && !p.installAdmin)
          throw new WarrenError(
            'MISSING_SCOPE',
            `host_id is a placement hint for the install's admin: this key lacks the scope admin of ${DEFAULT_ORG}`,
            { missing_scope: 'admin' },
          );
        if (req.body.from_snapshot) await checkSnapshotAccess(ctx.store, p, req.body.from_snapshot);
        // Only whether the caller may see it: the creator reads the template once, through the host.
        else await ctx.templates.checkVisible(p.orgId, req.body.template);
        const sandbox = await ctx.creator.create(p.orgId, req.body);
        req.auditResource = { type: 'sandbox', id: sandbox.id };
        return reply.status(201).send(sandbox);
      },
    );

    app.get(
      '/v1/sandboxes',
      {
        schema: {
          tags: ['sandboxes'],
          summary:
            'List sandboxes; filter by state and by `metadata.<key>=<value>`; stopped ones only with state=stopped',
          querystring: ListSandboxesQuery,
          response: { 200: SandboxList, ...errors },
        },
      },
      async (req) => {
        const q = req.query as Record<string, unknown>;
        const metadata: Record<string, string> = {};
        for (const [k, v] of Object.entries(q))
          if (k.startsWith('metadata.')) metadata[k.slice(9)] = String(v);
        const filter = listFilter(req.principal!, metadata);
        if (!filter) return { items: [], next_cursor: null };
        return ctx.sandboxes.list({
          orgId: req.principal!.orgId,
          state: req.query.state,
          ...filter,
          limit: req.query.limit,
          cursor: req.query.cursor,
        });
      },
    );

    app.get(
      '/v1/sandboxes/:id',
      {
        schema: {
          tags: ['sandboxes'],
          summary: 'Get a sandbox',
          params: IdParams,
          response: { 200: Sandbox, ...errors },
        },
      },
      async (req) => ctx.sandboxes.get(req.principal!.orgId, req.params.id),
    );

    app.patch(
      '/v1/sandboxes/:id',
      {
        schema: {
          tags: ['sandboxes'],
          summary: 'Change metadata or TTL (the TTL restarts from now)',
          params: IdParams,
          body: UpdateSandboxRequest,
          response: { 200: Sandbox, ...errors },
        },
      },
      async (req) => {
        if (req.body.metadata)
          checkLabels(req.principal!.restriction, req.body.metadata, 'the metadata must keep them');
        return ctx.sandboxes.update(req.principal!.orgId, req.params.id, req.body);
      },
    );

    app.delete(
      '/v1/sandboxes/:id',
      {
        schema: {
          tags: ['sandboxes'],
          summary: 'Destroy a sandbox; `deleted` is false when it was already stopped',
          params: IdParams,
          response: { 200: DeleteResult, ...errors },
        },
      },
      async (req) => ({
        id: req.params.id,
        deleted: await ctx.sandboxes.destroy(req.principal!.orgId, req.params.id),
      }),
    );

    for (const action of ['pause', 'resume', 'hibernate', 'wake'] as const) {
      const summaries = {
        pause: 'Pause: CPU frozen, memory kept',
        resume: 'Resume a paused sandbox',
        hibernate:
          'Hibernate: memory, processes and files saved to disk; host memory and CPU freed',
        wake: 'Wake a hibernated sandbox (any call that needs it also wakes it)',
      };
      app.post(
        `/v1/sandboxes/:id/${action}`,
        {
          schema: {
            tags: ['lifecycle'],
            summary: summaries[action],
            params: IdParams,
            response: { 200: Sandbox, ...errors },
          },
        },
        async (req) => {
          const row = await ctx.sandboxes.row(req.principal!.orgId, req.params.id);
          return ctx.sandboxes.transition(row, action, 'requested');
        },
      );
    }

    app.get(
      '/v1/sandboxes/:id/events',
      {
        schema: {
          tags: ['lifecycle'],
          summary: 'State changes of a sandbox, oldest first, with time and cause',
          params: IdParams,
          response: { 200: SandboxEventList, ...errors },
        },
      },
      async (req) => ({ items: await ctx.sandboxes.events(req.principal!.orgId, req.params.id) }),
    );
  };

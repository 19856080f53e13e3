/** Snapshots of running sandboxes, forks, and fork-trees: many children from one capture. */
import type { FastifyPluginAsync } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import {
  ForkRequest,
  ForkTreeRequest,
  Sandbox,
  ForkTreeResult,
  IdParams,
  Snapshot,
  SnapshotList,
  SnapshotParams,
} from '@warren/protocol';
import type { Principal } from '../auth';
import type { AppContext } from '../context';
import { visibleOf } from '../keys/access';
import { checkCreate } from '../keys/restriction';
import { requestCause } from '../webhooks/cause';
import { NoContent, errors } from './responses';

/** Children take the parent's labels unless the request sets them; the parent matched already. */
function forkAccess(p: Principal, metadata: Record<string, string> | undefined): void {
  if (metadata !== undefined || p.restriction.sandboxId !== null)
    checkCreate(p.restriction, metadata);
}

export const snapshotRoutes =
  (ctx: AppContext): FastifyPluginAsync =>
  async (fastify) => {
    const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

    app.post(
      '/v1/sandboxes/:id/snapshots',
      {
        schema: {
          tags: ['snapshots'],
          summary:
            'Capture memory, processes and files of a running sandbox; it goes on running (held only for the capture)',
          params: IdParams,
          response: { 201: Snapshot, ...errors },
        },
      },
      async (req, reply) => {
        const snap = await ctx.snapshots.snapshot(req.principal!.orgId, req.params.id);
        ctx.webhooks.emitQuietly(
          req.principal!.orgId,
          'snapshot.created',
          { snapshot: snap, cause: requestCause('snapshot requested') },
          req.log,
        );
        return reply.status(201).send(snap);
      },
    );

    app.get(
      '/v1/snapshots',
      {
        schema: {
          tags: ['snapshots'],
          summary: 'List snapshots, newest first',
          response: { 200: SnapshotList, ...errors },
        },
      },
      async (req) => ({
        items: await visibleOf(
          ctx.store,
          req.principal!,
          await ctx.snapshots.list(req.principal!.orgId),
        ),
      }),
    );

    app.get(
      '/v1/snapshots/:snapshot_id',
      {
        schema: {
          tags: ['snapshots'],
          summary: 'Get a snapshot',
          params: SnapshotParams,
          response: { 200: Snapshot, ...errors },
        },
      },
      async (req) => ctx.snapshots.get(req.principal!.orgId, req.params.snapshot_id),
    );

    app.delete(
      '/v1/snapshots/:snapshot_id',
      {
        schema: {
          tags: ['snapshots'],
          summary:
            'Delete a snapshot and free its storage (sandboxes started from it are unaffected)',
          params: SnapshotParams,
          response: { 204: NoContent, ...errors },
        },
      },
      async (req, reply) => {
        req.auditResource = { type: 'snapshot', id: req.params.snapshot_id };
        await ctx.snapshots.delete(req.principal!.orgId, req.params.snapshot_id);
        return reply.status(204).send(null);
      },
    );

    app.post(
      '/v1/sandboxes/:id/fork-tree',
      {
        schema: {
          tags: ['snapshots'],
          summary:
            'Fork N (1 to 16) children from one capture of the running parent; all or nothing',
          params: IdParams,
          body: ForkTreeRequest,
          response: { 201: ForkTreeResult, ...errors },
        },
      },
      async (req, reply) => {
        forkAccess(req.principal!, req.body.metadata);
        const result = await ctx.snapshots.forkTree(req.principal!.orgId, req.params.id, req.body);
        return reply.status(201).send(result);
      },
    );

    app.post(
      '/v1/sandboxes/:id/fork',
      {
        schema: {
          tags: ['snapshots'],
          summary:
            "A new sandbox with a copy of the parent's files, started fresh: none of the parent's processes or memory",
          params: IdParams,
          body: ForkRequest,
          response: { 201: Sandbox, ...errors },
        },
      },
      async (req, reply) => {
        forkAccess(req.principal!, req.body.metadata);
        const child = await ctx.snapshots.fork(req.principal!.orgId, req.params.id, req.body);
        return reply.status(201).send(child);
      },
    );
  };

/** Managed PostgreSQL: create, list, get, update, delete, password rotation, restore, branches, events, logs, the CA. */
import type { FastifyPluginAsync } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import {
  BranchDatabaseRequest,
  CreateDatabaseRequest,
  Database,
  DatabaseEventList,
  DatabaseList,
  DatabaseLogQuery,
  DatabaseLogs,
  DatabaseParams,
  RestoreDatabaseRequest,
  UpdateDatabaseRequest,
} from '@warren/protocol';
import type { AppContext } from '../context';
import { reportDatabase } from '../webhooks/events';
import { NoContent, errors } from './responses';

export const databaseRoutes =
  (ctx: AppContext): FastifyPluginAsync =>
  async (fastify) => {
    const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
    const dbs = ctx.databases;
    const tags = ['databases'];

    app.post(
      '/v1/databases',
      {
        schema: {
          tags,
          summary:
            'Create a PostgreSQL 17 database in a sandbox of its own; answers once it has answered a query',
          body: CreateDatabaseRequest,
          response: { 201: Database, ...errors },
        },
      },
      async (req, reply) => {
        const db = await dbs.service.create(req.principal!.orgId, req.body);
        req.auditResource = { type: 'database', id: db.id };
        reportDatabase(ctx, req, 'database.created', db);
        return reply.status(201).send(db);
      },
    );

    app.get(
      '/v1/databases',
      {
        schema: {
          tags,
          summary: 'List databases, newest first',
          response: { 200: DatabaseList, ...errors },
        },
      },
      async (req) => ({ items: await dbs.service.list(req.principal!.orgId) }),
    );

    app.get(
      '/v1/databases/ca.pem',
      {
        schema: {
          tags,
          summary:
            "The install's database CA certificate (PEM), for `sslmode=verify-full`; needs no token",
          security: [],
          response: { 200: Type.String() },
        },
      },
      async (_req, reply) => reply.type('application/x-pem-file').send(dbs.caPem()),
    );

    app.get(
      '/v1/databases/:id',
      {
        schema: {
          tags,
          summary: 'Get a database',
          params: DatabaseParams,
          response: { 200: Database, ...errors },
        },
      },
      async (req) => dbs.service.get(req.principal!.orgId, req.params.id),
    );

    app.patch(
      '/v1/databases/:id',
      {
        schema: {
          tags,
          summary: 'Change the label or scale_to_zero_seconds',
          params: DatabaseParams,
          body: UpdateDatabaseRequest,
          response: { 200: Database, ...errors },
        },
      },
      async (req) => {
        req.auditResource = { type: 'database', id: req.params.id };
        return dbs.service.update(req.principal!.orgId, req.params.id, req.body);
      },
    );

    app.delete(
      '/v1/databases/:id',
      {
        schema: {
          tags,
          summary:
            'Delete a database: its server, its data volume and its archive (WAL and base backups) are gone',
          params: DatabaseParams,
          response: { 204: NoContent, ...errors },
        },
      },
      async (req, reply) => {
        req.auditResource = { type: 'database', id: req.params.id };
        await dbs.service.delete(req.principal!.orgId, req.params.id);
        return reply.status(204).send(null);
      },
    );

    app.post(
      '/v1/databases/:id/password',
      {
        schema: {
          tags,
          summary: 'Rotate the password: the old one stops working at once on both URLs',
          params: DatabaseParams,
          response: { 200: Database, ...errors },
        },
      },
      async (req) => {
        req.auditResource = { type: 'database', id: req.params.id };
        return dbs.service.rotatePassword(req.principal!.orgId, req.params.id);
      },
    );

    app.post(
      '/v1/databases/:id/restore',
      {
        schema: {
          tags,
          summary:
            'A new database restored from this one’s archive at target_time (default: the latest archived WAL)',
          params: DatabaseParams,
          body: RestoreDatabaseRequest,
          response: { 201: Database, ...errors },
        },
      },
      async (req, reply) => {
        req.auditResource = { type: 'database', id: req.params.id };
        const db = await dbs.copies.restore(req.principal!.orgId, req.params.id, req.body);
        reportDatabase(ctx, req, 'database.restored', db, { source_id: req.params.id });
        return reply.status(201).send(db);
      },
    );

    app.post(
      '/v1/databases/:id/branches',
      {
        schema: {
          tags,
          summary:
            'A new database with this one’s data as of now, its own credentials; the parent keeps running',
          params: DatabaseParams,
          body: BranchDatabaseRequest,
          response: { 201: Database, ...errors },
        },
      },
      async (req, reply) => {
        req.auditResource = { type: 'database', id: req.params.id };
        const db = await dbs.copies.branch(req.principal!.orgId, req.params.id, req.body);
        return reply.status(201).send(db);
      },
    );

    app.get(
      '/v1/databases/:id/events',
      {
        schema: {
          tags,
          summary:
            'What happened to a database: created, hibernated, woken, crashed, recovered, ...',
          params: DatabaseParams,
          response: { 200: DatabaseEventList, ...errors },
        },
      },
      async (req) => ({ items: await dbs.service.events(req.principal!.orgId, req.params.id) }),
    );

    app.get(
      '/v1/databases/:id/logs',
      {
        schema: {
          tags,
          summary: 'The last lines of the PostgreSQL server log',
          params: DatabaseParams,
          querystring: DatabaseLogQuery,
          response: { 200: DatabaseLogs, ...errors },
        },
      },
      async (req) => ({
        lines: await dbs.service.logs(req.principal!.orgId, req.params.id, req.query.lines),
      }),
    );
  };

/**
 * The access hooks of the API: every /v1 route declares its scopes
 * (./route-scopes.ts); a request is authenticated, its scopes checked, and a
 * restricted key's requests on one sandbox or snapshot checked against its
 * restriction before the handler runs.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Principal } from '../auth';
import type { AppContext } from '../context';
import { checkSandboxAccess, checkSnapshotAccess } from './access';
import { isRestricted } from './restriction';
import { routeAccess, type RouteAccess } from './route-scopes';
import { requireScopes } from './scopes';

type Config =
  | {
      access?: RouteAccess;
      /** Another way in for this route (a terminal's ?token=); null when the request has none. */
      queryToken?: (request: FastifyRequest) => Promise<Principal | null>;
    }
  | undefined;

/** Register before the routes: it tags each route with its access and refuses undeclared ones. */
export function declareRouteScopes(app: FastifyInstance): void {
  app.addHook('onRoute', (route) => {
    if (!route.url.startsWith('/v1/')) return;
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    for (const method of methods) {
      const access = routeAccess(method, route.url);
      if (!access)
        throw new Error(
          `route ${method} ${route.url} declares no scope: add it to packages/server/src/keys/route-scopes.ts`,
        );
      route.config = { ...(route.config as object), access } as typeof route.config;
    }
  });
}

export function accessHooks(app: FastifyInstance, ctx: AppContext): void {
  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
    const path = request.url.split('?')[0] ?? '';
    const config = request.routeOptions.config as Config;
    const access = config?.access;
    if (!path.startsWith('/v1/') || access === 'public') return;
    const byToken =
      config?.queryToken && !request.headers.authorization
        ? await config.queryToken(request)
        : null;
    // Unknown routes too: without a key, a caller learns nothing of the API.
    request.principal =
      byToken ?? (await ctx.keys.authenticateFrom(request.ip, request.headers.authorization));
    if (Array.isArray(access)) requireScopes(request.principal.scopes, access);
    // A request on a sandbox (an exec stream, a file transfer) keeps it from being idle while open.
    const onSandbox = /^\/v1\/sandboxes\/([^/]+)\/./.exec(path);
    if (onSandbox?.[1]) reply.raw.once('close', ctx.sandboxes.beginOperation(onSandbox[1]));
  });

  app.addHook('preHandler', async (request) => {
    const p = request.principal;
    if (!p || !isRestricted(p.restriction)) return;
    const url = request.routeOptions.url ?? '';
    const params = request.params as { id?: string; snapshot_id?: string };
    if (url.startsWith('/v1/sandboxes/:id') && params.id)
      await checkSandboxAccess(ctx.store, p, params.id);
    if (url.startsWith('/v1/snapshots/:snapshot_id') && params.snapshot_id)
      await checkSnapshotAccess(ctx.store, p, params.snapshot_id);
  });
}

/**
 * The web dashboard (packages/dashboard, built by scripts/setup.sh into its
 * dist/) served at `/` through @fastify/static: hashed files under /assets/
 * are cached for a year, index.html is revalidated on every load, and any
 * other GET of a client route (no file extension, not an API path) answers
 * index.html so the single-page app's router takes over.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fastifyStatic from '@fastify/static';

/** Paths that are never the dashboard's: the API, MCP and Prometheus. */
const SERVER_PATHS = /^\/(?:v1(?:\/|$)|mcp(?:\/|$)|metrics(?:\/|$))/;

export interface Dashboard {
  /** For the not-found handler: true when it answered the request with the app. */
  fallback(request: FastifyRequest, reply: FastifyReply): boolean;
}

export async function registerDashboard(
  app: FastifyInstance,
  dir: string | null,
): Promise<Dashboard> {
  if (!dir || !existsSync(join(dir, 'index.html'))) {
    if (dir) app.log.warn({ dir }, 'dashboard not built (npm run build -w packages/dashboard)');
    return { fallback: () => false };
  }
  await app.register(fastifyStatic, {
    root: dir,
    prefix: '/',
    index: ['index.html'],
    cacheControl: false,
    setHeaders(res, path) {
      res.setHeader(
        'cache-control',
        path.startsWith(join(dir, 'assets')) ? 'public, max-age=31536000, immutable' : 'no-cache',
      );
    },
  });
  return {
    fallback(request, reply) {
      const path = request.url.split('?')[0] ?? '/';
      if (request.method !== 'GET' && request.method !== 'HEAD') return false;
      if (SERVER_PATHS.test(path) || /\.[A-Za-z0-9]+$/.test(path)) return false;
      void reply.header('cache-control', 'no-cache').sendFile('index.html');
      return true;
    },
  };
}

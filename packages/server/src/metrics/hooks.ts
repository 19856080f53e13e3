/** Counts every answered API request: method, route pattern, status, time, and the error code. */
import type { FastifyInstance } from 'fastify';
import type { Metrics } from './registry';

export function metricsHooks(app: FastifyInstance, metrics: Metrics): void {
  app.addHook('onResponse', async (request, reply) => {
    // The route pattern, never the raw URL: ids and paths would make a series each.
    const route = request.routeOptions.url ?? 'unmatched';
    metrics.request(
      request.method,
      route,
      reply.statusCode,
      reply.elapsedTime / 1000,
      request.errorCode,
    );
  });
}

/**
 * The HTTP server of the control plane, as a Fastify server factory: requests
 * and upgrades whose Host names a preview URL go to the preview proxy before
 * Fastify sees them (they carry no API token); everything else is the API.
 * The API's own upgrades (terminal WebSockets) are emitted on `apiUpgrades`,
 * which @fastify/websocket listens on instead of the server.
 */
import type { EventEmitter } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import type { PreviewProxy } from './proxy';

/** The HTTP options Fastify applies to a server it makes itself (with its defaults filled in). */
interface ServerOptions {
  keepAliveTimeout?: number;
  requestTimeout?: number;
  connectionTimeout?: number;
}

/** With `tls`, the server is HTTPS (HTTP/1.1): API and previews alike; plain HTTP is not served. */
export function previewServerFactory(
  preview: PreviewProxy,
  tls?: { cert: string; key: string },
  apiUpgrades?: EventEmitter,
) {
  return (
    handler: (req: IncomingMessage, res: ServerResponse) => void,
    opts: ServerOptions = {},
  ): Server => {
    const route = (req: IncomingMessage, res: ServerResponse) => {
      const target = preview.match(req.headers.host);
      if (target) preview.handleRequest(req, res, target);
      else handler(req, res);
    };
    const server: Server = tls ? createTlsServer(tls, route) : createServer(route);
    server.on('upgrade', (req: IncomingMessage, socket, head: Buffer) => {
      const target = preview.match(req.headers.host);
      if (target) return preview.handleUpgrade(req, socket, head, target);
      if (apiUpgrades && apiUpgrades.listenerCount('upgrade') > 0)
        return apiUpgrades.emit('upgrade', req, socket, head);
      // The API has no upgrades of its own unless another listener takes them.
      if (server.listenerCount('upgrade') === 1)
        socket.end('HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n');
    });
    // As Fastify sets them on servers it makes (no request timeout: uploads may take long).
    if (opts.keepAliveTimeout !== undefined) server.keepAliveTimeout = opts.keepAliveTimeout;
    if (opts.requestTimeout !== undefined) server.requestTimeout = opts.requestTimeout;
    if (opts.connectionTimeout !== undefined) server.setTimeout(opts.connectionTimeout);
    return server;
  };
}

/**
 * A throwaway HTTP server on 127.0.0.1 that stands in for the Warren API in
 * unit tests: it records every request and lets each test answer as it likes.
 */
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Recorded {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: IncomingHttpHeaders;
  /** The first MiB of the body (big uploads are counted, not kept). */
  body: Buffer;
  size: number;
  /** How many chunks the body arrived in (more than one means it was streamed). */
  chunks: number;
}

// Handlers may return whatever `return res.end()` style code yields; it is awaited and ignored.
export type Handler = (req: Recorded, res: ServerResponse) => unknown;

export interface FakeApi {
  url: string;
  requests: Recorded[];
  close(): Promise<void>;
}

const KEEP = 1024 * 1024;

export async function startFakeApi(handler: Handler): Promise<FakeApi> {
  const requests: Recorded[] = [];
  const server = createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const kept: Buffer[] = [];
    let size = 0;
    let chunks = 0;
    for await (const chunk of req as AsyncIterable<Buffer>) {
      if (size < KEEP) kept.push(chunk);
      size += chunk.length;
      chunks++;
    }
    const rec: Recorded = {
      method: req.method ?? 'GET',
      path: url.pathname,
      query: url.searchParams,
      headers: req.headers,
      body: Buffer.concat(kept).subarray(0, KEEP),
      size,
      chunks,
    };
    requests.push(rec);
    try {
      await handler(rec, res);
    } catch (err) {
      if (!res.headersSent) sendError(res, 'INTERNAL', String(err), 500);
      else res.destroy();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        // Keep-alive sockets would otherwise hold close() open.
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

export function sendError(
  res: ServerResponse,
  code: string,
  message: string,
  status: number,
): void {
  sendJson(res, status, { error: { code, message, request_id: 'req_test' } });
}

/** Writes ndjson in the given raw pieces, pausing between them so each arrives as its own chunk. */
export async function sendChunks(res: ServerResponse, pieces: (string | Buffer)[], delayMs = 15) {
  res.writeHead(200, { 'content-type': 'application/x-ndjson' });
  for (const piece of pieces) {
    res.write(piece);
    await new Promise((r) => setTimeout(r, delayMs));
  }
  res.end();
}

export const ndjson = (...events: unknown[]) => events.map((e) => `${JSON.stringify(e)}\n`);

/** A URL on which nothing listens: a port that was free a moment ago. */
export async function deadUrl(): Promise<string> {
  const api = await startFakeApi(() => {});
  await api.close();
  return api.url;
}

/** A complete Sandbox record, for handlers that must return one. */
export function sandboxRecord(id: string, extra: Record<string, unknown> = {}) {
  return {
    id,
    org_id: 'org_1',
    template: 'base',
    state: 'running',
    cpu: 1,
    memory_mb: 512,
    metadata: {},
    env_keys: [],
    ttl_seconds: 3600,
    host_id: 'host_1',
    created_at: '2025-01-01T00:00:00.000Z',
    last_activity_at: '2025-01-01T00:00:00.000Z',
    expires_at: '2025-01-01T01:00:00.000Z',
    stopped_at: null,
    stop_reason: null,
    ...extra,
  };
}

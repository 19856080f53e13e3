/**
 * A throwaway HTTP server on 127.0.0.1 that stands in for the Warren API in
 * unit tests: it records every request and lets each test answer as it likes.
 *
 * Its answers are typed from the protocol's schemas (@warren/protocol): the
 * fixtures below build complete records, `sendJson` takes only protocol
 * response bodies, and handlers declare one-off bodies with `satisfies`. A
 * response shape that drifts from the protocol then fails the type check
 * instead of testing the SDK against a server that does not exist.
 */
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type {
  DeleteResult,
  EgressEventList,
  ErrorBody,
  ErrorCode,
  ExecEvent,
  ExecResult,
  FileInfo,
  FileList,
  Health,
  NetworkView,
  PreviewToken,
  ProcessInfo,
  Sandbox,
  SandboxList,
  Snapshot,
  Static,
  Template,
  TemplateList,
  UsageReport,
  Volume,
  WriteResult,
} from '@warren/protocol';

/** Protocol bodies that have a schema but no named type in @warren/protocol. */
export type DeleteResultBody = Static<typeof DeleteResult>;
export type EgressEventListBody = Static<typeof EgressEventList>;
export type TemplateListBody = Static<typeof TemplateList>;

/** Every JSON body the fake may answer a protocol route with. */
export type ApiBody =
  | Sandbox
  | SandboxList
  | DeleteResultBody
  | ExecResult
  | ProcessInfo
  | FileInfo
  | FileList
  | WriteResult
  | NetworkView
  | EgressEventListBody
  | PreviewToken
  | Snapshot
  | Template
  | TemplateListBody
  | Volume
  | Health
  | UsageReport
  | ErrorBody;

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

/** Answers a protocol route with its JSON body (declare it with `satisfies <Type>`). */
export function sendJson(res: ServerResponse, status: number, body: ApiBody): void {
  sendRaw(res, status, body);
}

/** Answers with any JSON: for paths that are not protocol routes (tests of the HTTP client itself). */
export function sendRaw(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

export function sendError(
  res: ServerResponse,
  code: ErrorCode,
  message: string,
  status: number,
): void {
  sendJson(res, status, { error: { code, message, request_id: 'req_test' } } satisfies ErrorBody);
}

/**
 * Writes ndjson in the given raw pieces, each written on its own: the next
 * piece goes out only once the previous one has been handed to the socket
 * and the event loop has turned, so the client gets the chance to read it
 * as a chunk of its own.
 */
export async function sendChunks(res: ServerResponse, pieces: (string | Buffer)[]) {
  res.writeHead(200, { 'content-type': 'application/x-ndjson' });
  for (const piece of pieces) {
    await new Promise<void>((resolve, reject) =>
      res.write(piece, (err) => (err ? reject(err) : resolve())),
    );
    await new Promise((resolve) => setImmediate(resolve));
  }
  res.end();
}

/** Exec events as ndjson lines. */
export const ndjson = (...events: ExecEvent[]) => events.map((e) => `${JSON.stringify(e)}\n`);

/** Cuts `text` at the given offsets: pieces for sendChunks that split lines. */
export function cutAt(text: string, offsets: number[]): string[] {
  const pieces: string[] = [];
  let from = 0;
  for (const at of [...offsets, text.length]) {
    pieces.push(text.slice(from, at));
    from = at;
  }
  return pieces;
}

/** A URL on which nothing listens: a port that was free a moment ago. */
export async function deadUrl(): Promise<string> {
  const api = await startFakeApi(() => {});
  await api.close();
  return api.url;
}

/** A complete Sandbox record, for handlers that must return one. */
export function sandboxRecord(id: string, extra: Partial<Sandbox> = {}): Sandbox {
  const record = {
    id,
    org_id: 'org_1',
    template: 'base',
    state: 'running',
    cpu: 1,
    memory_mb: 512,
    disk_mb: 1024,
    volumes: [],
    metadata: {},
    env_keys: [],
    ttl_seconds: 3600,
    host_id: 'host_1',
    created_at: '2025-01-01T00:00:00.000Z',
    last_activity_at: '2025-01-01T00:00:00.000Z',
    expires_at: '2025-01-01T01:00:00.000Z',
    stopped_at: null,
    stop_reason: null,
    parent_id: null,
    snapshot_id: null,
    lineage: [],
    fork_kind: null,
    persistent: false,
    idle_timeout_seconds: 300,
    preview_url: `http://{port}-${id}.localhost:8080`,
    preview_auth: false,
  } satisfies Sandbox;
  return { ...record, ...extra };
}

/** A complete ProcessInfo record: a running process unless `extra` says otherwise. */
export function processInfo(pid: number, extra: Partial<ProcessInfo> = {}): ProcessInfo {
  const info = {
    pid,
    cmd: '/bin/sh',
    args: [],
    cwd: '/root',
    state: 'running',
    exit_code: null,
    signal: null,
    timed_out: false,
    started_at: '2025-01-01T00:00:00.000Z',
    ended_at: null,
    output_truncated: false,
  } satisfies ProcessInfo;
  return { ...info, ...extra };
}

/** A complete FileInfo record: a regular file unless `extra` says otherwise. */
export function fileInfo(path: string, extra: Partial<FileInfo> = {}): FileInfo {
  const info = {
    name: path.split('/').at(-1) ?? '',
    path,
    type: 'file',
    size: 0,
    mode: '644',
    mtime: '2025-01-01T00:00:00.000Z',
  } satisfies FileInfo;
  return { ...info, ...extra };
}

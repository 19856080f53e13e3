/**
 * Relaying one HTTP request upstream and its answer back, with the sandbox's
 * bound secrets put in the headers; shared by the plain HTTP proxy and TLS
 * interception.
 */
import {
  request as httpRequest,
  type IncomingMessage,
  type OutgoingHttpHeaders,
  type ServerResponse,
} from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { Duplex } from 'node:stream';
import { logEgress } from './log';
import type { EgressOptions, SandboxEgress } from './types';

const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authorization',
  'proxy-authenticate',
  'te',
  'trailer',
  'upgrade',
]);

function headersFor(sbx: SandboxEgress, host: string, raw: string[]): OutgoingHttpHeaders {
  const secrets = sbx.secrets.get(host) ?? [];
  const replaced = new Set(secrets.map((s) => s.header.toLowerCase()));
  const headers: Record<string, string | string[]> = {};
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i]!;
    const lower = name.toLowerCase();
    if (HOP_BY_HOP.has(lower) || replaced.has(lower)) continue;
    const prev = headers[name];
    headers[name] = prev === undefined ? raw[i + 1]! : [prev, raw[i + 1]!].flat();
  }
  for (const s of secrets) headers[s.header] = s.value;
  return headers;
}

/** Relays one request upstream and the answer back; logs it with its byte counts. */
export function forward(
  options: EgressOptions,
  sbx: SandboxEgress,
  req: IncomingMessage,
  res: ServerResponse,
  target: {
    protocol: 'http' | 'connect';
    host: string;
    port: number;
    address: string;
    path: string;
  },
  open: () => Promise<Duplex>,
  started: number,
): void {
  let out = 0;
  let inb = 0;
  let reason = 'allowed';
  req.on('data', (c: Buffer) => (out += c.length));
  const make = target.protocol === 'http' ? httpRequest : httpsRequest;
  const upstream = make({
    method: req.method,
    path: target.path,
    headers: headersFor(sbx, target.host, req.rawHeaders),
    setHost: false,
    // No agent: the connection is ours, to the address the policy checked.
    createConnection: ((_o: unknown, cb: (err: Error | null, s?: Duplex) => void) => {
      open().then(
        (s) => cb(null, s),
        (err: Error) => cb(err),
      );
    }) as never,
  });
  upstream.on('response', (ur) => {
    ur.on('error', () => res.destroy());
    const headers: string[] = [];
    for (let i = 0; i + 1 < ur.rawHeaders.length; i += 2)
      if (!HOP_BY_HOP.has(ur.rawHeaders[i]!.toLowerCase()))
        headers.push(ur.rawHeaders[i]!, ur.rawHeaders[i + 1]!);
    res.writeHead(ur.statusCode ?? 502, ur.statusMessage, headers);
    ur.on('data', (c: Buffer) => (inb += c.length));
    ur.pipe(res);
  });
  upstream.on('error', (err) => {
    reason = `upstream failed: ${err.message}`;
    if (!res.headersSent) {
      res.writeHead(502, { 'content-type': 'text/plain', 'x-warren-egress': 'upstream-error' });
      res.end(`warren egress: ${reason}\n`);
    } else res.destroy();
  });
  res.on('close', () => {
    upstream.destroy();
    logEgress(
      options,
      sbx,
      {
        protocol: target.protocol,
        host: target.host,
        port: target.port,
        address: target.address,
        decision: 'allowed',
        reason,
        bytes_out: out,
        bytes_in: inb,
      },
      started,
    );
  });
  req.pipe(upstream);
}

export function deny(res: ServerResponse, reason: string): void {
  res.writeHead(403, { 'content-type': 'text/plain', 'x-warren-egress': 'denied' });
  res.end(`warren egress: denied: ${reason}\n`);
}

/** A request or response that errors (a client or server going away) is torn down, not thrown. */
export function guard(req: IncomingMessage, res: ServerResponse): void {
  req.on('error', () => res.destroy());
  res.on('error', () => req.destroy());
}

/**
 * Servers for egress tests and benchmarks, run inside a test network
 * namespace (see netns.ts): HTTP on 80, HTTPS on 443 (certificate from the
 * test's own CA), a TCP echo on 7000. HTTP and HTTPS answer `/echo` with the
 * request's headers as JSON and `/bytes?mb=N` with N MiB of zeros.
 * Usage: upstream.ts <address> <dir with server.pem, server.key>
 */
import { readFileSync } from 'node:fs';
import { createServer as createHttp, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createHttps } from 'node:https';
import { createServer as createTcp } from 'node:net';
import { join } from 'node:path';

const [address = '0.0.0.0', dir = '.'] = process.argv.slice(2);
const CHUNK = Buffer.alloc(1024 * 1024);

function handle(req: IncomingMessage, res: ServerResponse): void {
  const url = new URL(req.url ?? '/', 'http://x');
  if (url.pathname === '/bytes') {
    const mb = Number(url.searchParams.get('mb') ?? 1);
    res.writeHead(200, { 'content-length': mb * CHUNK.length });
    let left = mb;
    const more = () => {
      while (left > 0) {
        left -= 1;
        if (!res.write(CHUNK)) return void res.once('drain', more);
      }
      res.end();
    };
    return more();
  }
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ path: req.url, headers: req.headers }));
}

const tls = {
  cert: readFileSync(join(dir, 'server.pem')),
  key: readFileSync(join(dir, 'server.key')),
};
const servers = [
  createHttp(handle).listen(80, address),
  createHttps(tls, handle).listen(443, address),
  createTcp((s) => s.pipe(s)).listen(7000, address),
];
let ready = 0;
for (const s of servers)
  s.once('listening', () => {
    if (++ready === servers.length) console.log('ready');
  });
process.on('SIGTERM', () => process.exit(0));

/**
 * Egress from inside the sandbox. The sandbox has no network device, only
 * loopback; the agent listens on an HTTP proxy port and a SOCKS5 port there
 * and relays every connection to the host over a data connection (see
 * GuestEgress): the native relay does it where it runs (relay.ts), else the
 * streams here. The host-side proxy decides what may leave. Processes the
 * agent starts get the usual proxy variables and trust the host proxy's CA.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { dirname } from 'node:path';
import { rootCertificates } from 'node:tls';
import { EGRESS_HTTP_PORT, EGRESS_SOCKS_PORT, type GuestEgress } from '@warren/protocol/guest';
import { dialData } from './data';
import { relay as nativeRelay } from './relay';

/** Where the CA goes: the path update-ca-certificates reads, and the system bundle. */
const CA_FILE = '/usr/local/share/ca-certificates/warren-egress.crt';
const BUNDLE = '/etc/ssl/certs/ca-certificates.crt';

let token: string | null = null;
/** The CA this root already trusts: the template's bake trusts the install's, so its copies skip it. */
let trusted: string | null = null;
let servers: Server[] = [];
const relays = new Set<Socket>();

function relay(client: Socket): void {
  client.on('error', () => undefined);
  if (token === null) return void client.destroy();
  const host = dialData(token);
  relays.add(client).add(host);
  // An end is passed on once what is buffered is written; an error tears both down.
  const onClose = (self: Socket, other: Socket) => (hadError: boolean) => {
    relays.delete(self);
    if (hadError) other.destroy();
    else other.end();
  };
  client.once('close', onClose(client, host));
  host.once('close', onClose(host, client));
  client.on('error', () => host.destroy());
  host.on('error', () => client.destroy());
  client.pipe(host);
  host.pipe(client);
}

function listen(port: number): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = createServer({ noDelay: true }, relay);
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve(server));
  });
}

/** Adds the CA to the trust store files of the sandbox (its root is a private overlay). */
function trust(caPem: string): void {
  try {
    mkdirSync(dirname(CA_FILE), { recursive: true });
    writeFileSync(CA_FILE, caPem);
    let bundle: string;
    try {
      bundle = readFileSync(BUNDLE, 'utf8');
    } catch {
      // An image without a trust store gets the Mozilla roots the agent's Node.js carries.
      mkdirSync(dirname(BUNDLE), { recursive: true });
      bundle = rootCertificates.join('\n');
    }
    if (!bundle.includes(caPem.trim())) writeFileSync(BUNDLE, bundle + '\n' + caPem);
  } catch {
    // A read-only image keeps its trust store; the variables still point at the CA.
  }
}

/** Called with every hello: the listeners are started once and outlive checkpoints. */
export async function configureEgress(egress: GuestEgress | undefined): Promise<void> {
  if (!egress) return;
  token = egress.token;
  if (trusted !== egress.ca_pem) {
    trust(egress.ca_pem);
    trusted = egress.ca_pem;
  }
  const fast = nativeRelay();
  if (fast && servers.length === 0) return fast.egress(token, EGRESS_HTTP_PORT, EGRESS_SOCKS_PORT);
  if (servers.length === 0)
    servers = await Promise.all([listen(EGRESS_HTTP_PORT), listen(EGRESS_SOCKS_PORT)]);
}

/** Before a checkpoint: no relay may hold a host socket. */
export function dropEgress(): void {
  for (const s of relays) s.destroy();
  relays.clear();
}

/** The environment every process gets while egress is configured. */
export function egressEnv(): Record<string, string> {
  if (token === null) return {};
  const http = `http://127.0.0.1:${EGRESS_HTTP_PORT}`;
  const socks = `socks5h://127.0.0.1:${EGRESS_SOCKS_PORT}`;
  const noProxy = 'localhost,127.0.0.1,::1';
  return {
    HTTP_PROXY: http,
    HTTPS_PROXY: http,
    http_proxy: http,
    https_proxy: http,
    ALL_PROXY: socks,
    all_proxy: socks,
    NO_PROXY: noProxy,
    no_proxy: noProxy,
    SSL_CERT_FILE: BUNDLE,
    REQUESTS_CA_BUNDLE: BUNDLE,
    CURL_CA_BUNDLE: BUNDLE,
    PIP_CERT: BUNDLE,
    GIT_SSL_CAINFO: BUNDLE,
    NODE_EXTRA_CA_CERTS: CA_FILE,
  };
}

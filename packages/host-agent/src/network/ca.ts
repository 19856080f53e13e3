/**
 * The per-install CA of the egress proxy. It signs a certificate for a host
 * only when a sandbox has a secret bound to that host: the proxy then
 * terminates the sandbox's TLS, adds the header, and opens its own TLS
 * connection upstream, verified against the system's trust store plus the
 * operator's CAs. Keys and certificates are made by the `openssl` command
 * (EC P-256): a tool every host has, kept current by the distribution,
 * rather than X.509 code of our own.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { createSecureContext, rootCertificates, type SecureContext } from 'node:tls';
import { promisify } from 'node:util';

const run = promisify(execFile);
const EC = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];

export class EgressCa {
  private readonly leaves = new Map<string, Promise<SecureContext>>();

  private constructor(
    readonly dir: string,
    readonly certPem: string,
    /** What upstream servers are verified against: the system's roots and the operator's CAs. */
    readonly upstreamCa: string[],
  ) {}

  /** Loads the CA from `dir`, or creates it there (key mode 0600) on first use. */
  static async open(dir: string, extraCaFiles: string[] = []): Promise<EgressCa> {
    await mkdir(dir, { recursive: true, mode: 0o700 });
    const cert = join(dir, 'ca.pem');
    const key = join(dir, 'ca.key');
    if (!existsSync(cert) || !existsSync(key)) {
      const tag = `${hostname()} ${Date.now().toString(36)}`;
      // prettier-ignore
      await run('openssl', [
        'req', '-x509', '-new', ...EC, '-keyout', key, '-out', cert,
        '-subj', `/O=Warren/CN=Warren egress CA ${tag}`, '-days', '3650',
        '-addext', 'basicConstraints=critical,CA:TRUE,pathlen:0',
        '-addext', 'keyUsage=critical,keyCertSign,cRLSign',
      ]);
    }
    const extra = await Promise.all(extraCaFiles.map((f) => readFile(f, 'utf8')));
    return new EgressCa(dir, await readFile(cert, 'utf8'), [...rootCertificates, ...extra]);
  }

  /** A TLS server context for `host`, signed by this CA; made once per host and kept. */
  contextFor(host: string): Promise<SecureContext> {
    let ctx = this.leaves.get(host);
    if (!ctx) {
      ctx = this.makeLeaf(host);
      ctx.catch(() => this.leaves.delete(host));
      this.leaves.set(host, ctx);
    }
    return ctx;
  }

  private async makeLeaf(host: string): Promise<SecureContext> {
    const tmp = await mkdtemp(join(this.dir, 'leaf-'));
    try {
      // prettier-ignore
      await run('openssl', [
        'req', '-x509', '-new', ...EC, '-keyout', join(tmp, 'key'), '-out', join(tmp, 'cert'),
        '-subj', `/CN=${host}`, '-days', '30',
        '-CA', join(this.dir, 'ca.pem'), '-CAkey', join(this.dir, 'ca.key'),
        '-addext', `subjectAltName=DNS:${host}`,
        '-addext', 'basicConstraints=critical,CA:FALSE',
        '-addext', 'extendedKeyUsage=serverAuth',
      ]);
      return createSecureContext({
        key: await readFile(join(tmp, 'key')),
        cert: (await readFile(join(tmp, 'cert'), 'utf8')) + this.certPem,
      });
    } finally {
      await rm(tmp, { recursive: true, force: true });
    }
  }
}

/**
 * The database CA of an install and the front door's server certificate.
 * Clients verify the front door against `ca.pem` (`sslmode=verify-full
 * sslrootcert=ca.pem`). Keys and certificates are made by the `openssl`
 * command (EC P-256), as the egress CA in the host agent does: a tool every
 * host has, kept current by the distribution, rather than X.509 code of our own.
 *
 *   $dir/ca.pem, ca.key (0600)         made once, kept for ten years
 *   $dir/server.pem, server.key (0600) signed by the CA for the given names;
 *                                      made again when the names change, the CA
 *                                      changes, or less than 30 days are left
 *   $dir/server.names                  the names the server certificate was made for
 */
import { execFile } from 'node:child_process';
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { chmod, mkdir, mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { isIP } from 'node:net';
import { join } from 'node:path';
import { createSecureContext, type SecureContext } from 'node:tls';
import { promisify } from 'node:util';

const run = promisify(execFile);
const EC = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];
/** Within what Apple's clients accept for a server certificate (825 days). */
const SERVER_DAYS = 825;
const RENEW_BEFORE_MS = 30 * 24 * 3600 * 1000;
const LABEL = '[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?';
/** A host name, or a wildcard `*.` in front of one. */
const DNS_NAME = new RegExp(`^(\\*\\.)?${LABEL}(\\.${LABEL})*$`);

export interface DatabaseTls {
  /** The CA certificate clients verify against. */
  caPem: string;
  /** Its path: `sslrootcert=<caFile>`. */
  caFile: string;
  /** The front door's TLS context: the server certificate, its key and the CA. */
  context: SecureContext;
  /** The subject alternative names of the server certificate, as given to openssl. */
  names: string[];
}

export interface DatabaseTlsOptions {
  /**
   * Names the server certificate is valid for: `DNS:<name>` or `IP:<address>`,
   * or a bare name or address (classified here). A wildcard `*.<domain>`
   * covers the SNI names `<endpoint>.<domain>`.
   */
  names: string[];
}

/** Loads the database CA and server certificate from `dir`, making what is missing or stale. */
export async function openDatabaseTls(
  dir: string,
  { names }: DatabaseTlsOptions,
): Promise<DatabaseTls> {
  const sans = normaliseNames(names);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const caFile = join(dir, 'ca.pem');
  const caPem = await loadOrMakeCa(dir);
  const ca = new X509Certificate(caPem);

  const stamp = `${ca.fingerprint256}\n${[...sans].sort().join('\n')}\n`;
  const current = await readServer(dir, ca, stamp);
  const server = current ?? (await makeServer(dir, sans, stamp));
  const context = createSecureContext({ key: server.key, cert: server.cert + caPem });
  return { caPem, caFile, context, names: sans };
}

/**
 * Another server certificate from the same CA, in `$dir/<file>.pem` and
 * `<file>.key` (the API's under WARREN_TLS=auto), kept and renewed like the
 * front door's. Returns the chain (certificate, then CA) and the key.
 */
export async function issueServerCertificate(
  dir: string,
  names: string[],
  file: string,
): Promise<{ cert: string; key: string; caPem: string }> {
  const sans = normaliseNames(names);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const caPem = await loadOrMakeCa(dir);
  const ca = new X509Certificate(caPem);
  const stamp = `${ca.fingerprint256}\n${[...sans].sort().join('\n')}\n`;
  const pair =
    (await readServer(dir, ca, stamp, file)) ?? (await makeServer(dir, sans, stamp, file));
  return { cert: pair.cert + caPem, key: pair.key, caPem };
}

/** `DNS:`/`IP:` entries, deduplicated and lower-cased; throws on anything openssl could misread. */
export function normaliseNames(names: string[]): string[] {
  const out: string[] = [];
  for (const raw of names) {
    const m = /^(DNS|IP):(.*)$/i.exec(raw.trim());
    let value = (m ? m[2]! : raw).trim().toLowerCase();
    if (/^\[.*\]$/.test(value)) value = value.slice(1, -1);
    const kind = m ? m[1]!.toUpperCase() : isIP(value) ? 'IP' : 'DNS';
    if (kind === 'IP' && !isIP(value)) throw new Error(`not an IP address: ${raw}`);
    if (kind === 'DNS' && (value.length > 253 || !DNS_NAME.test(value)))
      throw new Error(`not a DNS name: ${raw}`);
    const entry = `${kind}:${value}`;
    if (!out.includes(entry)) out.push(entry);
  }
  if (out.length === 0) throw new Error('the database server certificate needs at least one name');
  return out;
}

async function loadOrMakeCa(dir: string): Promise<string> {
  const cert = join(dir, 'ca.pem');
  const key = join(dir, 'ca.key');
  const [pem, keyPem] = await Promise.all([readIfExists(cert), readIfExists(key)]);
  if (pem && keyPem) return pem;
  const tmp = await mkdtemp(join(dir, 'ca-'));
  try {
    const tag = `${hostname()} ${Date.now().toString(36)}`;
    // prettier-ignore
    await run('openssl', [
      'req', '-x509', '-new', ...EC, '-keyout', join(tmp, 'key'), '-out', join(tmp, 'cert'),
      '-subj', `/O=Warren/CN=Warren database CA ${tag}`, '-days', '3650',
      '-addext', 'basicConstraints=critical,CA:TRUE,pathlen:0',
      '-addext', 'keyUsage=critical,keyCertSign,cRLSign',
    ]);
    await chmod(join(tmp, 'key'), 0o600);
    await rename(join(tmp, 'key'), key);
    await rename(join(tmp, 'cert'), cert);
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
  // A new CA invalidates the server certificate: its stamp names the old CA.
  return readFile(cert, 'utf8');
}

interface ServerPair {
  cert: string;
  key: string;
}

/** The stored server certificate if it was made for these names by this CA and is not expiring. */
async function readServer(
  dir: string,
  ca: X509Certificate,
  stamp: string,
  file = 'server',
): Promise<ServerPair | null> {
  const [cert, key, names] = await Promise.all([
    readIfExists(join(dir, `${file}.pem`)),
    readIfExists(join(dir, `${file}.key`)),
    readIfExists(join(dir, `${file}.names`)),
  ]);
  if (!cert || !key || names !== stamp) return null;
  try {
    const x = new X509Certificate(cert);
    if (!x.checkIssued(ca) || !x.verify(ca.publicKey)) return null;
    if (Date.parse(x.validTo) - Date.now() < RENEW_BEFORE_MS) return null;
    if (!x.checkPrivateKey(createPrivateKey(key))) return null;
    return { cert, key };
  } catch {
    return null;
  }
}

async function makeServer(
  dir: string,
  sans: string[],
  stamp: string,
  file = 'server',
): Promise<ServerPair> {
  const tmp = await mkdtemp(join(dir, `${file}-`));
  try {
    const cn = sans.find((s) => s.startsWith('DNS:'))?.slice(4) ?? 'Warren databases';
    // prettier-ignore
    await run('openssl', [
      'req', '-x509', '-new', ...EC, '-keyout', join(tmp, 'key'), '-out', join(tmp, 'cert'),
      '-subj', `/O=Warren/CN=${cn}`, '-days', String(SERVER_DAYS),
      '-CA', join(dir, 'ca.pem'), '-CAkey', join(dir, 'ca.key'),
      '-addext', `subjectAltName=${sans.join(',')}`,
      '-addext', 'basicConstraints=critical,CA:FALSE',
      '-addext', 'keyUsage=critical,digitalSignature',
      '-addext', 'extendedKeyUsage=serverAuth',
    ]);
    await chmod(join(tmp, 'key'), 0o600);
    // The stamp goes last: a crash in between leaves a pair that is not reused.
    await rm(join(dir, `${file}.names`), { force: true });
    await rename(join(tmp, 'key'), join(dir, `${file}.key`));
    await rename(join(tmp, 'cert'), join(dir, `${file}.pem`));
    await writeFile(join(dir, `${file}.names`), stamp, { mode: 0o600 });
    return {
      cert: await readFile(join(dir, `${file}.pem`), 'utf8'),
      key: await readFile(join(dir, `${file}.key`), 'utf8'),
    };
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
}

async function readIfExists(path: string): Promise<string | null> {
  try {
    return await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}

/**
 * TLS of the API itself: a certificate and key from files (WARREN_TLS_CERT,
 * WARREN_TLS_KEY), or WARREN_TLS=auto, which issues one from the install's CA
 * (the one clients already trust for the database front door, `ca.pem` under
 * $WARREN_HOME/db-tls) for loopback, the configured host, WARREN_TLS_NAMES
 * and the preview domain's wildcard, so preview URLs work over TLS too.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Config } from './config';
import { issueServerCertificate } from './databases/front-door/tls';

export interface ApiTls {
  cert: string;
  key: string;
}

/** The names of an auto certificate; a wildcard needs two labels under it for clients to accept it. */
export function autoNames(config: Config, extra: string[]): string[] {
  const names = ['localhost', '127.0.0.1', '::1', ...extra];
  if (config.host !== '0.0.0.0' && config.host !== '::') names.push(config.host);
  if (config.previewDomain.includes('.')) names.push(`*.${config.previewDomain}`);
  return names;
}

export async function loadApiTls(config: Config): Promise<ApiTls | null> {
  const tls = config.tls;
  if (!tls) return null;
  if (tls.kind === 'files') {
    const [cert, key] = await Promise.all([
      readFile(tls.certFile, 'utf8'),
      readFile(tls.keyFile, 'utf8'),
    ]);
    return { cert, key };
  }
  const { cert, key } = await issueServerCertificate(
    join(config.home, 'db-tls'),
    autoNames(config, tls.names),
    'api',
  );
  return { cert, key };
}

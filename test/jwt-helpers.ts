/**
 * Test helpers on loopback: requests from a chosen 127.x source address (so
 * per-address limits can be tested apart), and a JWKS server for JWT tests.
 */
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  exportJWK,
  generateKeyPair,
  SignJWT,
  type JWK,
  type JWTPayload,
  type CryptoKey,
} from 'jose';

export interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any
}

/** One request from `from` (a 127.x address) to the platform at `base`. */
export function callFrom(
  base: string,
  from: string,
  path: string,
  o: { token?: string; method?: string; json?: unknown } = {},
): Promise<Reply> {
  const url = new URL(path, base);
  const body = o.json === undefined ? undefined : JSON.stringify(o.json);
  const headers: Record<string, string> = {};
  if (o.token) headers.authorization = `Bearer ${o.token}`;
  if (body) headers['content-type'] = 'application/json';
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        path,
        method: o.method ?? 'GET',
        headers,
        localAddress: from,
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: text ? JSON.parse(text) : null,
          }),
        );
      },
    );
    req.once('error', reject);
    req.end(body);
  });
}

export interface SigningKey {
  kid: string;
  privateKey: CryptoKey;
  jwk: JWK;
}

export async function signingKey(kid: string): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPair('ES256');
  return {
    kid,
    privateKey,
    jwk: { ...(await exportJWK(publicKey)), kid, alg: 'ES256', use: 'sig' },
  };
}

export function sign(
  key: SigningKey,
  claims: JWTPayload,
  o: { issuer: string; audience: string; expiresIn?: string | number; notBefore?: string | number },
): Promise<string> {
  const jwt = new SignJWT(claims)
    .setProtectedHeader({ alg: 'ES256', kid: key.kid })
    .setIssuer(o.issuer)
    .setAudience(o.audience)
    .setSubject(String(claims.sub ?? 'user-1'))
    .setIssuedAt()
    .setExpirationTime(o.expiresIn ?? '5m');
  if (o.notBefore !== undefined) jwt.setNotBefore(o.notBefore);
  return jwt.sign(key.privateKey);
}

/** Serves `keys()` as a JWKS at /jwks on a loopback port; counts fetches. */
export async function jwksServer(
  keys: () => JWK[],
): Promise<{ url: string; fetches: () => number; close(): Promise<void> }> {
  let fetches = 0;
  const server: Server = createServer((req, res) => {
    fetches++;
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ keys: keys() }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/jwks`,
    fetches: () => fetches,
    close: () => new Promise((r) => server.close(() => r())),
  };
}

/**
 * Auth overhead per request: the same cheap request (a 404 of an unknown
 * route) with a hashed `wrn_` key or an ES256 JWT (JWKS served on loopback,
 * cached after the first request) beside it without auth (`/nope` is outside
 * /v1, so nothing is authenticated). Also authenticate() alone.
 * Run: node --import tsx bench/auth.ts (part of `npm run bench`).
 */
import { startTestPlatform } from '../test/fixture';
import { jwksServer, sign, signingKey } from '../test/jwt-helpers';
import { now, percentile, printTable, type Row } from './stats';

const RUNS = Number(process.env.BENCH_AUTH_RUNS ?? 500);
const WARMUP = 50;
const ISSUER = 'https://idp.bench';
const AUDIENCE = 'warren-bench';

/**
 * Microseconds of RUNS calls of each fn, after WARMUP unmeasured ones; the
 * fns take turns, so a busy moment of the machine falls on all of them alike.
 */
async function sample(...fns: Array<() => Promise<unknown>>): Promise<number[][]> {
  for (let i = 0; i < WARMUP; i++) for (const fn of fns) await fn();
  const out = fns.map((): number[] => []);
  for (let i = 0; i < RUNS; i++)
    for (const [n, fn] of fns.entries()) {
      const t = now();
      await fn();
      out[n]!.push((now() - t) * 1000);
    }
  return out;
}

async function main(): Promise<void> {
  const key = await signingKey('bench');
  const jwks = await jwksServer(() => [key.jwk]);
  const p = await startTestPlatform({
    jwt: {
      jwksUrl: jwks.url,
      issuer: ISSUER,
      audience: AUDIENCE,
      orgClaim: 'org',
      scopesClaim: 'scope',
      sandboxClaim: null,
      labelsClaim: null,
      jwksCooldownMs: 30_000,
    },
  });
  try {
    const wrn = (
      await p.json('/v1/keys', {
        method: 'POST',
        json: { name: 'bench', scopes: ['sandboxes:read'] },
      })
    ).key as string;
    const jwt = await sign(
      key,
      { org: 'org_default', scope: 'sandboxes:read' },
      { issuer: ISSUER, audience: AUDIENCE, expiresIn: '1h' },
    );
    const get = async (path: string, token: string | null) => {
      const res = await p.api(path, { token });
      if (res.status !== 404) throw new Error(`${path}: ${res.status} ${await res.text()}`);
      await res.arrayBuffer();
    };
    const [plain, withKey, withJwt] = await sample(
      () => get('/nope', null),
      () => get('/v1/nope', wrn),
      () => get('/v1/nope', jwt),
    );
    const rows: Row[] = [
      {
        name: 'request with a hashed key',
        unit: 'µs',
        warren: withKey!,
        direct: plain!,
        directName: 'same request, no auth',
      },
      {
        name: 'request with a JWT (ES256)',
        unit: 'µs',
        warren: withJwt!,
        direct: plain!,
        directName: 'same request, no auth',
      },
    ];
    const keys = p.context.keys;
    const [directKey, directJwt] = await sample(
      () => keys.authenticate(`Bearer ${wrn}`),
      () => keys.authenticate(`Bearer ${jwt}`),
    );
    console.log(`\nWarren auth overhead — ${RUNS} requests each, ${new Date().toISOString()}\n`);
    printTable(rows);
    const show = (xs: number[]) =>
      `median ${percentile(xs, 50).toFixed(0)} µs, p95 ${percentile(xs, 95).toFixed(0)} µs`;
    console.log(`\nauthenticate() alone: hashed key ${show(directKey!)}; JWT ${show(directJwt!)}`);
    console.log(`JWKS fetches: ${jwks.fetches()} (cached after the first token)`);
  } finally {
    await p.stop();
    await jwks.close();
  }
}

await main();

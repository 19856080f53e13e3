import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import Fastify from 'fastify';
import { SCOPES, WarrenError } from '@warren/protocol';
import { buildApp } from '../../src/app';
import type { AppContext } from '../../src/context';
import type { Principal } from '../../src/auth';
import { listFilter } from '../../src/keys/access';
import { declareRouteScopes } from '../../src/keys/hooks';
import {
  checkCreate,
  matchesSandbox,
  restrictionWithin,
  UNRESTRICTED,
} from '../../src/keys/restriction';
import { ROUTE_SCOPES, routeAccess } from '../../src/keys/route-scopes';
import { hasScope, missingScope, parseScopes, requireScopes } from '../../src/keys/scopes';
import { isExpired, newKeyExpiry } from '../../src/keys/service';

function code(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof WarrenError, String(err));
    return err.code;
  }
  return 'no error';
}

function principal(over: Partial<Principal>): Principal {
  return {
    tokenId: 'tok_a',
    orgId: 'org_a',
    scopes: ['admin'],
    restriction: UNRESTRICTED,
    installAdmin: false,
    expiresAt: null,
    ...over,
  };
}

describe('scopes', () => {
  it('admin implies every scope; others only themselves', () => {
    for (const s of SCOPES) assert.ok(hasScope(['admin'], s), s);
    assert.ok(hasScope(['exec'], 'exec'));
    assert.ok(!hasScope(['exec'], 'files'));
    assert.ok(!hasScope(['sandboxes:read'], 'sandboxes:write'));
    assert.equal(missingScope(['snapshots'], ['snapshots', 'sandboxes:write']), 'sandboxes:write');
    assert.equal(missingScope(['snapshots', 'sandboxes:write'], ['snapshots']), null);
  });

  it('a missing scope is 403 MISSING_SCOPE naming it', () => {
    try {
      requireScopes(['sandboxes:read'], ['exec']);
      assert.fail('no error');
    } catch (err) {
      assert.ok(err instanceof WarrenError);
      assert.equal(err.code, 'MISSING_SCOPE');
      assert.equal(err.status, 403);
      assert.match(err.message, /\bexec\b/);
    }
  });

  it('stored lists drop unknown names and survive bad JSON', () => {
    assert.deepEqual(parseScopes('["exec","nonsense","files"]'), ['exec', 'files']);
    assert.deepEqual(parseScopes('not json'), []);
  });
});

describe('restrictions', () => {
  const a = { id: 'sbx_a', metadata: { team: 'x', env: 'dev' } };
  const b = { id: 'sbx_b', metadata: { team: 'y' } };

  it('match by sandbox id, by labels, or both', () => {
    assert.ok(matchesSandbox(UNRESTRICTED, a));
    assert.ok(matchesSandbox({ sandboxId: 'sbx_a', labels: null }, a));
    assert.ok(!matchesSandbox({ sandboxId: 'sbx_a', labels: null }, b));
    assert.ok(matchesSandbox({ sandboxId: null, labels: { team: 'x' } }, a));
    assert.ok(!matchesSandbox({ sandboxId: null, labels: { team: 'x' } }, b));
    assert.ok(!matchesSandbox({ sandboxId: 'sbx_a', labels: { team: 'y' } }, a));
  });

  it('creates must carry the labels; a sandbox-restricted key cannot create', () => {
    assert.equal(
      code(() => checkCreate(UNRESTRICTED, undefined)),
      'no error',
    );
    const labelled = { sandboxId: null, labels: { team: 'x' } };
    assert.equal(
      code(() => checkCreate(labelled, { team: 'x', more: '1' })),
      'no error',
    );
    assert.equal(
      code(() => checkCreate(labelled, { team: 'y' })),
      'KEY_RESTRICTED',
    );
    assert.equal(
      code(() => checkCreate(labelled, undefined)),
      'KEY_RESTRICTED',
    );
    const pinned = { sandboxId: 'sbx_a', labels: null };
    assert.equal(
      code(() => checkCreate(pinned, {})),
      'KEY_RESTRICTED',
    );
  });

  it('a key makes keys only within its own restriction', () => {
    const labelled = { sandboxId: null, labels: { team: 'x' } };
    const pinned = { sandboxId: 'sbx_a', labels: null };
    assert.ok(restrictionWithin(UNRESTRICTED, pinned));
    assert.ok(restrictionWithin(pinned, pinned));
    assert.ok(!restrictionWithin(pinned, UNRESTRICTED));
    assert.ok(!restrictionWithin(pinned, { sandboxId: 'sbx_b', labels: null }));
    assert.ok(restrictionWithin(labelled, { sandboxId: null, labels: { team: 'x', env: 'a' } }));
    assert.ok(!restrictionWithin(labelled, { sandboxId: null, labels: { team: 'y' } }));
    assert.ok(!restrictionWithin(labelled, pinned));
    assert.ok(restrictionWithin(labelled, { sandboxId: 'sbx_a', labels: { team: 'x' } }));
  });

  it('list filters add the key restriction and empty out on contradiction', () => {
    assert.deepEqual(listFilter(principal({}), { a: '1' }), { metadata: { a: '1' } });
    const labelled = principal({ restriction: { sandboxId: null, labels: { team: 'x' } } });
    assert.deepEqual(listFilter(labelled, { a: '1' }), { metadata: { a: '1', team: 'x' } });
    assert.equal(listFilter(labelled, { team: 'y' }), null);
    const pinned = principal({ restriction: { sandboxId: 'sbx_a', labels: null } });
    assert.deepEqual(listFilter(pinned, {}), { metadata: {}, ids: ['sbx_a'] });
  });
});

describe('key expiry', () => {
  const now = Date.parse('2030-01-01T00:00:00Z');

  it('a key is expired from its expiry on', () => {
    assert.ok(!isExpired(null, now));
    assert.ok(!isExpired('2030-01-01T00:00:01Z', now));
    assert.ok(isExpired('2030-01-01T00:00:00Z', now));
    assert.ok(isExpired('2029-12-31T23:59:59Z', now));
  });

  it('expires_at or ttl_seconds, in the future, never past the creator', () => {
    assert.equal(newKeyExpiry({}, null, now), null);
    assert.equal(newKeyExpiry({ ttl_seconds: 60 }, null, now), '2030-01-01T00:01:00.000Z');
    assert.equal(
      newKeyExpiry({ expires_at: '2030-02-01T00:00:00Z' }, null, now),
      '2030-02-01T00:00:00.000Z',
    );
    assert.equal(
      code(() => newKeyExpiry({ expires_at: '2029-01-01T00:00:00Z' }, null, now)),
      'INVALID_REQUEST',
    );
    assert.equal(
      code(() => newKeyExpiry({ expires_at: '2031-01-01T00:00:00Z', ttl_seconds: 5 }, null, now)),
      'INVALID_REQUEST',
    );
    // A key made by an expiring key inherits its expiry and cannot outlive it.
    const limit = '2030-01-02T00:00:00.000Z';
    assert.equal(newKeyExpiry({}, limit, now), limit);
    assert.equal(newKeyExpiry({ ttl_seconds: 60 }, limit, now), '2030-01-01T00:01:00.000Z');
    assert.equal(
      code(() => newKeyExpiry({ ttl_seconds: 7 * 86400 }, limit, now)),
      'KEY_RESTRICTED',
    );
  });
});

describe('every route declares its scopes', () => {
  it('every /v1 route of the app has an entry, and every entry a route', async () => {
    const seen: string[] = [];
    // buildApp itself throws on a /v1 route without an entry (hidden ones included).
    const app = await buildApp({ version: 'test' } as AppContext, false);
    await app.ready();
    const doc = app.swagger() as { paths: Record<string, Record<string, unknown>> };
    for (const [path, ops] of Object.entries(doc.paths))
      for (const method of Object.keys(ops)) {
        const url = path.replace(/\{(\w+)\}/g, ':$1');
        seen.push(`${method.toUpperCase()} ${url}`);
        assert.ok(routeAccess(method.toUpperCase(), url), `${method.toUpperCase()} ${url}`);
      }
    for (const entry of Object.keys(ROUTE_SCOPES)) {
      const [method, url] = entry.split(' ') as [string, string];
      assert.ok(app.hasRoute({ method: method as 'GET', url }), `stale entry ${entry}`);
    }
    assert.ok(seen.length > 50);
    await app.close();
  });

  it('an undeclared /v1 route stops the app from starting', async () => {
    const app = Fastify();
    declareRouteScopes(app);
    assert.throws(
      () => app.get('/v1/undeclared', async () => 'x'),
      /GET \/v1\/undeclared declares no scope/,
    );
    app.get('/elsewhere', async () => 'x');
    await app.close();
  });
});

/** JWT settings from the environment (WARREN_JWT_*), through loadConfig. */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/config';

describe('JWT configuration from the environment', () => {
  const dir = mkdtempSync(join(tmpdir(), 'wjwt-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const base = {
    WARREN_HOME: dir,
    WARREN_JWT_JWKS_URL: 'https://idp.example/.well-known/jwks.json',
    WARREN_JWT_ISSUER: 'https://idp.example/',
    WARREN_JWT_AUDIENCE: 'warren',
  };

  it('is off without WARREN_JWT_JWKS_URL, whatever else is set', () => {
    assert.equal(loadConfig({ WARREN_HOME: dir }).jwt, null);
    assert.equal(
      loadConfig({ WARREN_HOME: dir, WARREN_JWT_ISSUER: 'x', WARREN_JWT_ORG_CLAIM: 'tenant' }).jwt,
      null,
    );
  });

  it('the claim names default to org and scope, with no restriction claims', () => {
    assert.deepEqual(loadConfig(base).jwt, {
      jwksUrl: 'https://idp.example/.well-known/jwks.json',
      issuer: 'https://idp.example/',
      audience: 'warren',
      orgClaim: 'org',
      scopesClaim: 'scope',
      sandboxClaim: null,
      labelsClaim: null,
      jwksCooldownMs: 30_000,
    });
    // Empty values are the defaults too.
    const empty = loadConfig({
      ...base,
      WARREN_JWT_ORG_CLAIM: '',
      WARREN_JWT_SCOPES_CLAIM: '',
      WARREN_JWT_SANDBOX_CLAIM: '',
      WARREN_JWT_LABELS_CLAIM: '',
      WARREN_JWT_JWKS_COOLDOWN_SECONDS: '',
    }).jwt;
    assert.equal(empty?.orgClaim, 'org');
    assert.equal(empty?.scopesClaim, 'scope');
    assert.equal(empty?.sandboxClaim, null);
    assert.equal(empty?.labelsClaim, null);
    assert.equal(empty?.jwksCooldownMs, 30_000);
  });

  it('every WARREN_JWT_* claim name and the JWKS cooldown are taken as given', () => {
    assert.deepEqual(
      loadConfig({
        ...base,
        WARREN_JWT_ORG_CLAIM: 'https://warren.example/tenant',
        WARREN_JWT_SCOPES_CLAIM: 'permissions',
        WARREN_JWT_SANDBOX_CLAIM: 'warren_sandbox',
        WARREN_JWT_LABELS_CLAIM: 'warren_labels',
        WARREN_JWT_JWKS_COOLDOWN_SECONDS: '5',
      }).jwt,
      {
        jwksUrl: 'https://idp.example/.well-known/jwks.json',
        issuer: 'https://idp.example/',
        audience: 'warren',
        orgClaim: 'https://warren.example/tenant',
        scopesClaim: 'permissions',
        sandboxClaim: 'warren_sandbox',
        labelsClaim: 'warren_labels',
        jwksCooldownMs: 5000,
      },
    );
  });

  it('a JWKS URL without issuer or audience, or a bad cooldown, is refused at start', () => {
    const { WARREN_JWT_ISSUER: _i, ...noIssuer } = base;
    const { WARREN_JWT_AUDIENCE: _a, ...noAudience } = base;
    assert.throws(() => loadConfig(noIssuer), /WARREN_JWT_ISSUER and WARREN_JWT_AUDIENCE/);
    assert.throws(() => loadConfig(noAudience), /WARREN_JWT_ISSUER and WARREN_JWT_AUDIENCE/);
    assert.throws(
      () => loadConfig({ ...base, WARREN_JWT_JWKS_COOLDOWN_SECONDS: 'soon' }),
      /WARREN_JWT_JWKS_COOLDOWN_SECONDS must be a number/,
    );
  });
});

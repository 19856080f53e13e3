/** Preview URL routing and auth helpers: host names, tokens, what reaches the sandbox. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { WarrenError } from '@warren/protocol';
import { hashToken } from '../../src/auth';
import {
  checkPreviewAuth,
  presentedToken,
  tokenCookie,
  withoutToken,
} from '../../src/preview/auth';
import { previewHostMatcher } from '../../src/preview/proxy';
import { newPreviewToken, previewUrl } from '../../src/preview/token';
import type { SandboxRecord } from '../../src/store/store';

describe('preview host names', () => {
  const match = previewHostMatcher('localhost');

  it('reads port and sandbox id, with or without the API port and the sbx_ prefix', () => {
    const want = { port: 3000, sandboxId: 'sbx_abc123' };
    assert.deepEqual(match('3000-sbx_abc123.localhost:8080'), want);
    assert.deepEqual(match('3000-sbx_abc123.localhost'), want);
    assert.deepEqual(match('3000-abc123.localhost:8080'), want);
    assert.deepEqual(match('3000-SBX_ABC123.LOCALHOST:8080'), want, 'host names are case-blind');
    assert.deepEqual(match('70000-sbx_abc123.localhost'), { port: 70000, sandboxId: 'sbx_abc123' });
  });

  it('leaves every other host to the API', () => {
    for (const host of [
      undefined,
      'localhost:8080',
      '127.0.0.1:8080',
      'sbx_abc123.localhost',
      '3000-sbx_abc123.localhost.evil.example',
      '3000-sbx_abc123.notlocalhost',
      'x3000-sbx_abc123.localhost',
      '3000-sbx_abc-123.localhost',
    ])
      assert.equal(match(host), null, String(host));
  });

  it('escapes the configured domain', () => {
    const m = previewHostMatcher('preview.example.com');
    assert.deepEqual(m('8000-sbx_a1.preview.example.com'), { port: 8000, sandboxId: 'sbx_a1' });
    assert.equal(m('8000-sbx_a1.previewxexample.com'), null);
  });

  it('shows preview URLs from the template', () => {
    assert.equal(
      previewUrl('http://{port}-{id}.localhost:8080', 'sbx_a'),
      'http://{port}-sbx_a.localhost:8080',
    );
    assert.equal(
      previewUrl('https://{port}-{id}.p.example.com', 'sbx_a'),
      'https://{port}-sbx_a.p.example.com',
    );
  });
});

describe('preview tokens', () => {
  const token = newPreviewToken();
  const row = (auth: boolean, t: string | null = token) =>
    ({
      id: 'sbx_a',
      preview_auth: auth ? 1 : 0,
      preview_token_hash: t && hashToken(t),
    }) as SandboxRecord;
  const req = (url: string, headers: Record<string, string> = {}) =>
    ({ url, headers }) as unknown as IncomingMessage;
  const presented = (url: string, headers: Record<string, string> = {}) =>
    presentedToken(req(url, headers), new URL(url, 'http://x'));
  const code = (fn: () => void) => {
    try {
      fn();
      return null;
    } catch (err) {
      return (err as WarrenError).code;
    }
  };

  it('are wpt_ and 40 characters, and differ', () => {
    assert.match(token, /^wpt_[a-z0-9]{40}$/);
    assert.notEqual(newPreviewToken(), token);
  });

  it('come from the header, then the query, then the cookie', () => {
    assert.deepEqual(presented('/', { 'x-warren-preview-token': 'a' }), {
      token: 'a',
      from: 'header',
    });
    assert.deepEqual(presented('/?warren_preview_token=b'), { token: 'b', from: 'query' });
    assert.deepEqual(presented('/', { cookie: 'x=1; warren_preview_token=c; y=2' }), {
      token: 'c',
      from: 'cookie',
    });
    assert.equal(presented('/', { cookie: 'other_warren_preview_token=d' }), null);
    assert.equal(presented('/'), null);
  });

  it('are needed only with preview_auth, and must match', () => {
    assert.equal(
      code(() => checkPreviewAuth(row(false), null)),
      null,
    );
    assert.equal(
      code(() => checkPreviewAuth(row(true), null)),
      'PREVIEW_AUTH_REQUIRED',
    );
    assert.equal(
      code(() => checkPreviewAuth(row(true), { token: 'wpt_wrong', from: 'header' })),
      'PREVIEW_AUTH_REQUIRED',
    );
    assert.equal(
      code(() => checkPreviewAuth(row(true), { token, from: 'cookie' })),
      null,
    );
    assert.equal(
      code(() => checkPreviewAuth(row(true, null), { token, from: 'header' })),
      'PREVIEW_AUTH_REQUIRED',
      'no stored hash lets nothing in',
    );
  });

  it('never reach the sandbox: header, cookie and query parameter are taken out', () => {
    const url = '/a/../b?x=1&warren_preview_token=t&y=%20';
    const out = withoutToken(url, new URL(url, 'http://x'), {
      host: 'h',
      'x-warren-preview-token': 't',
      cookie: 'a=1; warren_preview_token=t; b=2',
    });
    assert.equal(out.path, '/b?x=1&y=+');
    assert.deepEqual(out.headers, { host: 'h', cookie: 'a=1; b=2' });
    const plain = '/a/../b?y=%20';
    assert.equal(withoutToken(plain, new URL(plain, 'http://x'), {}).path, plain, 'kept as sent');
    const only = withoutToken('/', new URL('http://x/'), { cookie: 'warren_preview_token=t' });
    assert.equal(only.headers.cookie, undefined);
  });

  it('set a host-only HttpOnly cookie, Secure behind TLS', () => {
    assert.equal(tokenCookie('t', false), 'warren_preview_token=t; Path=/; HttpOnly; SameSite=Lax');
    assert.match(tokenCookie('t', true), /; Secure$/);
  });
});

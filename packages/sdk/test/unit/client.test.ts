import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { HttpClient, WarrenConnectionError, WarrenError, type ApiError } from '../../src/index';
import { deadUrl, sendError, sendRaw, startFakeApi, type FakeApi } from '../helpers/fake-api';

let api: FakeApi;

before(async () => {
  api = await startFakeApi((req, res) => {
    if (req.path === '/missing')
      return sendError(res, 'SANDBOX_NOT_FOUND', 'no sandbox sbx_x', 404);
    // A code this version of the protocol does not know (from a newer server).
    if (req.path === '/teapot') {
      const error = { code: 'SOMETHING_NEW', message: 'newer server', request_id: 'req_test' };
      return sendRaw(res, 409, { error });
    }
    if (req.path === '/proxy') {
      res.writeHead(502, { 'content-type': 'text/html' });
      return res.end('<html>bad gateway</html>');
    }
    if (req.path === '/empty') {
      res.writeHead(204);
      return res.end();
    }
    // Not a protocol route: the HTTP client itself is under test.
    sendRaw(res, 200, { ok: true });
  });
});
after(() => api.close());

test('an error body becomes a WarrenError with the same code, message and request id', async () => {
  const client = new HttpClient({ apiUrl: api.url, apiKey: 'k' });
  const err = await client.json('GET', '/missing').catch((e: unknown) => e);
  assert.ok(err instanceof WarrenError);
  assert.equal(err.code, 'SANDBOX_NOT_FOUND');
  assert.equal(err.message, 'no sandbox sbx_x');
  assert.equal(err.status, 404);
  assert.equal((err as ApiError).requestId, 'req_test');
});

test('an unknown code or a non-JSON body falls back to a code for the status', async () => {
  const client = new HttpClient({ apiUrl: api.url, apiKey: 'k' });
  const unknown = await client.json('GET', '/teapot').catch((e: unknown) => e);
  assert.ok(unknown instanceof WarrenError);
  assert.equal(unknown.code, 'INTERNAL');
  assert.equal(unknown.message, 'newer server');
  assert.deepEqual(unknown.details, { status: 409, code: 'SOMETHING_NEW', details: undefined });

  const proxy = await client.json('GET', '/proxy').catch((e: unknown) => e);
  assert.ok(proxy instanceof WarrenError);
  assert.equal(proxy.code, 'INTERNAL');
  assert.match(proxy.message, /^HTTP 502: <html>bad gateway/);
});

test('sends the bearer token and JSON; 204 decodes to undefined', async () => {
  const client = new HttpClient({ apiUrl: `${api.url}/`, apiKey: 'wrn_abc' });
  assert.deepEqual(
    await client.json('POST', '/echo', { json: { a: 1 }, query: { x: 'y z', n: undefined } }),
    {
      ok: true,
    },
  );
  const req = api.requests.at(-1)!;
  assert.equal(req.headers.authorization, 'Bearer wrn_abc');
  assert.equal(req.headers['content-type'], 'application/json');
  assert.equal(req.body.toString(), '{"a":1}');
  assert.equal(req.query.get('x'), 'y z');
  assert.equal(req.query.has('n'), false);
  assert.equal(await client.json('DELETE', '/empty'), undefined);
});

test('an unreachable server gives a coded connection error naming the URL', async () => {
  const url = await deadUrl();
  const err = await new HttpClient({ apiUrl: url, apiKey: 'k' })
    .json('GET', '/x')
    .catch((e: unknown) => e);
  assert.ok(err instanceof WarrenConnectionError);
  assert.equal(err.code, 'CONNECTION_FAILED');
  assert.ok(err.message.includes(url), err.message);
  assert.match(err.message, /ECONNREFUSED/);
});

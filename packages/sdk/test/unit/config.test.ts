import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { HttpClient, WarrenError, resolveConfig } from '../../src/index';
import { sendError, sendRaw, startFakeApi, type FakeApi } from '../helpers/fake-api';

let home: string;
let api: FakeApi;

before(async () => {
  home = await mkdtemp(join(tmpdir(), 'warren-sdk-'));
  api = await startFakeApi((req, res) => {
    if (!req.headers.authorization)
      return sendError(res, 'UNAUTHORIZED', 'missing bearer token', 401);
    sendRaw(res, 200, { auth: req.headers.authorization }); // not a protocol route: echoes the token
  });
});
after(async () => {
  await api.close();
  await rm(home, { recursive: true, force: true });
});

test('options win over the environment, which wins over the token file', async () => {
  await writeFile(join(home, 'admin-token'), 'wrn_fromfile\n');
  const env = { WARREN_HOME: home, WARREN_API: 'http://env:1/', WARREN_API_KEY: 'wrn_fromenv' };
  assert.deepEqual(resolveConfig({ apiUrl: 'http://opt:2', apiKey: 'wrn_opt' }, env), {
    apiUrl: 'http://opt:2',
    apiKey: 'wrn_opt',
  });
  assert.deepEqual(resolveConfig({}, env), { apiUrl: 'http://env:1', apiKey: 'wrn_fromenv' });
  // An empty variable counts as unset; the file is trimmed.
  assert.deepEqual(resolveConfig({}, { WARREN_HOME: home, WARREN_API_KEY: '' }), {
    apiUrl: 'http://127.0.0.1:8080',
    apiKey: 'wrn_fromfile',
  });
});

test('no key anywhere resolves to undefined', () => {
  const empty = join(home, 'nothing-here');
  assert.equal(resolveConfig({}, { WARREN_HOME: empty }).apiKey, undefined);
});

/** Runs `fn` with WARREN_* variables replaced, restoring them afterwards. */
async function withEnv(vars: Record<string, string | undefined>, fn: () => Promise<void>) {
  const saved = Object.fromEntries(Object.keys(vars).map((k) => [k, process.env[k]]));
  const apply = (v: Record<string, string | undefined>) => {
    for (const [k, val] of Object.entries(v)) {
      if (val === undefined) delete process.env[k];
      else process.env[k] = val;
    }
  };
  apply(vars);
  try {
    await fn();
  } finally {
    apply(saved);
  }
}

test('the client falls back to $WARREN_HOME/admin-token', async () => {
  await writeFile(join(home, 'admin-token'), 'wrn_fromfile\n');
  await withEnv({ WARREN_HOME: home, WARREN_API_KEY: undefined }, async () => {
    const res = await new HttpClient({ apiUrl: api.url }).json('GET', '/x');
    assert.deepEqual(res, { auth: 'Bearer wrn_fromfile' });
  });
});

test('a 401 without any key says where a key comes from', async () => {
  await withEnv(
    { WARREN_HOME: join(home, 'nothing-here'), WARREN_API_KEY: undefined },
    async () => {
      const err = await new HttpClient({ apiUrl: api.url })
        .json('GET', '/x')
        .catch((e: unknown) => e);
      assert.ok(err instanceof WarrenError);
      assert.equal(err.code, 'UNAUTHORIZED');
      assert.match(err.message, /^missing bearer token \(no API key was sent/);
      assert.ok(err.message.includes(join(home, 'nothing-here', 'admin-token')));
    },
  );
});

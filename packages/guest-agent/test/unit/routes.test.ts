/**
 * The hello's gate: the hello is answered before its identity and egress work
 * is done, and every other request (health aside) waits for that work.
 */
import assert from 'node:assert/strict';
import { connect, createServer, type ClientHttp2Session } from 'node:http2';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { GUEST_PATHS } from '@warren/protocol/guest';
import { ProcessTable } from '../../src/processes';
import { handle, type GuestState } from '../../src/routes';

const state = {
  sandboxId: null,
  env: {},
  connections: 0,
  startedAt: Date.now(),
  processes: new ProcessTable(() => process.env),
  settling: Promise.resolve(),
  prepareCheckpoint: () => undefined,
} as unknown as GuestState;

const server = createServer();
server.on('stream', (stream, headers) => handle(state, stream, headers));
let client: ClientHttp2Session;

before(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  client = connect(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
});
after(() => {
  client.close();
  server.close();
  state.processes.helper.close();
});

/** Resolves with the status and body of one request. */
function call(path: string, body?: unknown): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = client.request({ ':method': body === undefined ? 'GET' : 'POST', ':path': path });
    let status = 0;
    let text = '';
    req.on('response', (h) => (status = Number(h[':status'])));
    req.on('data', (d: Buffer) => (text += d.toString()));
    req.on('end', () => resolve({ status, text }));
    req.on('error', reject);
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

const pending = Symbol('pending');
const within = <T>(p: Promise<T>, ms: number) =>
  Promise.race([p, new Promise<typeof pending>((r) => setTimeout(() => r(pending), ms))]);

test('requests wait for the work of the last hello; health does not', async () => {
  let release!: () => void;
  state.settling = new Promise<void>((r) => (release = r));
  const list = call(GUEST_PATHS.processes);
  try {
    assert.equal(await within(list, 200), pending, 'the list waits');
    const health = await call(GUEST_PATHS.health);
    assert.equal(health.status, 200, 'health answers meanwhile');
  } finally {
    release();
  }
  const answered = await within(list, 2_000);
  assert.notEqual(answered, pending);
  assert.equal((answered as { status: number }).status, 200);
});

test('a hello is answered with its env applied, and its work then settles', async () => {
  const hello = await call(GUEST_PATHS.hello, { sandbox_id: 'sbx_gate', env: { A: '1' } });
  assert.equal(hello.status, 200);
  assert.equal(state.sandboxId, 'sbx_gate');
  assert.deepEqual(state.env, { A: '1' });
  assert.notEqual(await within(state.settling, 2_000), pending);
  const list = await call(GUEST_PATHS.processes);
  assert.equal(list.status, 200);
});

import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { Readable } from 'node:stream';
import { after, before, test } from 'node:test';
import { runCli, type Io } from '../../src/index';
import type {
  NetworkPolicy,
  NetworkView,
  SandboxList,
  UsageReport,
  WriteResult,
} from '@warren/protocol';
import {
  deadUrl,
  fileInfo,
  ndjson,
  sandboxRecord,
  sendChunks,
  sendError,
  sendJson,
  startFakeApi,
  type DeleteResultBody,
  type EgressEventListBody,
  type FakeApi,
} from '../../../sdk/test/helpers/fake-api';

let api: FakeApi;
let dir: string;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'warren-cli-'));
  api = await startFakeApi(async (req, res) => {
    const route = `${req.method} ${req.path}`;
    if (route === 'POST /v1/sandboxes') return sendJson(res, 201, sandboxRecord('sbx_new'));
    if (route === 'GET /v1/sandboxes') {
      const list = { items: [sandboxRecord('sbx_a')], next_cursor: null } satisfies SandboxList;
      return sendJson(res, 200, list);
    }
    if (route === 'GET /v1/sandboxes/sbx_1') return sendJson(res, 200, sandboxRecord('sbx_1'));
    if (route === 'POST /v1/sandboxes/sbx_1/exec/stream') {
      return sendChunks(
        res,
        ndjson(
          { type: 'start', pid: 5 },
          { type: 'stdout', data: 'out1\n' },
          { type: 'stderr', data: 'err1\n' },
          { type: 'stdout', data: 'out2\n' },
          { type: 'exit', exit_code: 3, signal: null, timed_out: false, duration_ms: 1 },
        ),
      );
    }
    if (route === 'GET /v1/sandboxes/sbx_1/files/stat') {
      if (req.query.get('path') === '/dst')
        return sendJson(res, 200, fileInfo('/dst', { type: 'dir' }));
      return sendError(res, 'FILE_NOT_FOUND', 'no such file', 404);
    }
    if (route === 'PUT /v1/sandboxes/sbx_1/files') {
      const written = { path: req.query.get('path') ?? '', size: req.size } satisfies WriteResult;
      return sendJson(res, 200, written);
    }
    if (route === 'GET /v1/sandboxes/sbx_1/files') {
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      return res.end('remote content');
    }
    if (
      route === 'GET /v1/sandboxes/sbx_1/network' ||
      route === 'PUT /v1/sandboxes/sbx_1/network'
    ) {
      const policy: NetworkPolicy =
        req.method === 'PUT' ? JSON.parse(req.body.toString()) : { mode: 'none' };
      const view = {
        mode: policy.mode,
        allow: policy.allow ?? [],
        deny: policy.deny ?? [],
        secrets: [],
      } satisfies NetworkView;
      return sendJson(res, 200, view);
    }
    if (route === 'GET /v1/sandboxes/sbx_1/egress') {
      return sendJson(res, 200, {
        items: [
          {
            id: 1,
            at: '2026-01-01T00:00:00.000Z',
            protocol: 'http',
            host: 'pypi.org',
            port: 443,
            address: null,
            decision: 'denied',
            reason: 'not in allow list',
            bytes_out: 0,
            bytes_in: 0,
            duration_ms: 0,
          },
        ],
      } satisfies EgressEventListBody);
    }
    if (route === 'GET /v1/usage') {
      const figures = {
        cpu_seconds: 12.5,
        memory_gb_seconds: 3,
        sandbox_seconds: 60,
        disk_bytes_peak: 2 * 1024 * 1024,
        net_rx_bytes: 0,
        net_tx_bytes: 0,
      };
      const by = req.query.get('group_by');
      return sendJson(res, 200, {
        from: req.query.get('from') ?? '',
        to: '2026-01-02T00:00:00.000Z',
        group_by: by ?? '',
        groups: [{ key: 'red', sandboxes: 2, ...figures }],
        totals: figures,
      } satisfies UsageReport);
    }
    if (req.method === 'DELETE' && req.path === '/v1/sandboxes/sbx_1') {
      return sendJson(res, 200, { id: 'sbx_1', deleted: true } satisfies DeleteResultBody);
    }
    sendError(res, 'SANDBOX_NOT_FOUND', `no sandbox ${req.path.split('/')[3]}`, 404);
  });
});
after(async () => {
  await api.close();
  await rm(dir, { recursive: true, force: true });
});

/** Runs the CLI in-process and captures what it prints. */
async function warren(...argv: string[]) {
  return warrenWithStdin([], ...argv);
}

async function warrenWithStdin(stdin: string[], ...argv: string[]) {
  let stdout = '';
  let stderr = '';
  const sink = (append: (s: string) => void) => ({
    write: (s: string) => (append(s), true),
    once: () => undefined,
  });
  const io: Io = {
    stdout: sink((s) => (stdout += s)),
    stderr: sink((s) => (stderr += s)),
    stdin: Readable.from(stdin),
    exitCode: 0,
  };
  const code = await runCli(['--api', api.url, '--token', 'wrn_cli', ...argv], io);
  return { code, stdout, stderr };
}

test('sandbox create passes options and prints the id', async () => {
  const r = await warren(
    'sandbox',
    'create',
    '--ttl',
    '60',
    '--env',
    'A=1',
    '-m',
    'team=x',
    '-m',
    'k=a=b',
  );
  assert.deepEqual(r, { code: 0, stdout: 'sbx_new\n', stderr: '' });
  const req = api.requests.at(-1)!;
  assert.equal(req.headers.authorization, 'Bearer wrn_cli');
  assert.deepEqual(JSON.parse(req.body.toString()), {
    template: 'base',
    ttl_seconds: 60,
    env: { A: '1' },
    metadata: { team: 'x', k: 'a=b' },
  });
  const json = await warren('sandbox', 'create', '--json');
  assert.equal(JSON.parse(json.stdout).id, 'sbx_new');
});

test('sandbox ls prints a table and passes filters', async () => {
  const r = await warren('sandbox', 'ls', '--state', 'running', '--meta', 'team=x');
  assert.equal(r.code, 0);
  assert.match(
    r.stdout,
    /^ID\s+TEMPLATE\s+STATE\s+CREATED\s+EXPIRES\nsbx_a\s+base\s+running\s+\S+ ago\s+\S+/,
  );
  assert.equal(api.requests.at(-1)!.query.get('metadata.team'), 'x');
  assert.equal((await warren('sandbox', 'ls', '--state', 'bogus')).code, 1);
});

test('sandbox exec streams output in order and exits with the command exit code', async () => {
  const r = await warren('sandbox', 'exec', 'sbx_1', '--cwd', '/w', '--', 'ls', '-la');
  assert.deepEqual(r, { code: 3, stdout: 'out1\nout2\n', stderr: 'err1\n' });
  assert.deepEqual(JSON.parse(api.requests.at(-1)!.body.toString()), {
    cmd: 'ls',
    args: ['-la'],
    cwd: '/w',
  });
});

test("sandbox exec -i sends this process's stdin", async () => {
  const r = await warrenWithStdin(
    ['line 1\n', 'line 2\n'],
    'sandbox',
    'exec',
    '-i',
    'sbx_1',
    'cat',
  );
  assert.equal(r.code, 3);
  assert.equal(JSON.parse(api.requests.at(-1)!.body.toString()).stdin, 'line 1\nline 2\n');
});

test('API errors print "error [CODE]: message" and exit 1', async () => {
  const r = await warren('sandbox', 'kill', 'sbx_gone');
  assert.deepEqual(r, {
    code: 1,
    stdout: '',
    stderr: 'error [SANDBOX_NOT_FOUND]: no sandbox sbx_gone\n',
  });
  assert.deepEqual(await warren('sandbox', 'rm', 'sbx_1'), {
    code: 0,
    stdout: 'sbx_1\n',
    stderr: '',
  });
});

test('an unreachable API is a CONNECTION_FAILED error', async () => {
  const url = await deadUrl();
  const r = await warren('--api', url, 'template', 'ls');
  assert.equal(r.code, 1);
  assert.ok(
    r.stderr.startsWith(`error [CONNECTION_FAILED]: cannot reach the Warren API at ${url}`),
  );
});

test('bad option values are usage errors', async () => {
  const r = await warren('sandbox', 'create', '--env', 'NOEQ');
  assert.equal(r.code, 1);
  assert.match(r.stderr, /expected KEY=VALUE/);
});

test('sandbox cp uploads into a remote directory and downloads to a local one', async () => {
  const local = join(dir, 'up.txt');
  await writeFile(local, 'local content');
  assert.equal((await warren('sandbox', 'cp', local, 'sbx_1:/dst')).code, 0);
  const put = api.requests.at(-1)!;
  assert.equal(put.query.get('path'), `/dst/${basename(local)}`);
  assert.equal(put.body.toString(), 'local content');

  assert.equal((await warren('sandbox', 'cp', 'sbx_1:/etc/motd', dir)).code, 0);
  assert.equal(await readFile(join(dir, 'motd'), 'utf8'), 'remote content');

  const empty = await warren('sandbox', 'cp', 'sbx_1:', dir);
  assert.equal(empty.code, 1);
  assert.match(empty.stderr, /missing path after "sbx_1:"/);

  const both = await warren('sandbox', 'cp', 'a', 'b');
  assert.equal(both.code, 1);
  assert.match(both.stderr, /must be <sandbox-id>:<path>/);
});

test('sandbox network shows and replaces the egress policy; sandbox egress lists decisions', async () => {
  const shown = await warren('sandbox', 'network', 'sbx_1');
  assert.equal(shown.code, 0);
  assert.equal(JSON.parse(shown.stdout).mode, 'none');
  const set = await warren(
    'sandbox',
    'network',
    'sbx_1',
    '--mode',
    'restricted',
    '--allow',
    'pypi.org:443',
    '--allow',
    '10.0.0.0/8',
  );
  assert.equal(set.code, 0);
  const req = api.requests.at(-1)!;
  assert.equal(req.method, 'PUT');
  assert.deepEqual(JSON.parse(req.body.toString()), {
    mode: 'restricted',
    allow: ['pypi.org:443', '10.0.0.0/8'],
  });
  const log = await warren('sandbox', 'egress', 'sbx_1', '--denied', '--limit', '5');
  assert.equal(log.code, 0);
  assert.match(log.stdout, /denied\s+http\s+pypi\.org:443 .*not in allow list/);
  assert.equal(api.requests.at(-1)!.query.get('decision'), 'denied');
});

test('usage passes the range and grouping and prints a table', async () => {
  const r = await warren('usage', '--group-by', 'label:team', '--from', '2026-01-01T00:00:00Z');
  assert.equal(r.code, 0, r.stderr);
  assert.equal(api.requests.at(-1)!.query.get('group_by'), 'label:team');
  assert.equal(api.requests.at(-1)!.query.get('from'), '2026-01-01T00:00:00Z');
  const [header, row] = r.stdout.trim().split('\n');
  assert.match(header!, /^GROUP\s+SANDBOXES\s+CPU S/);
  assert.match(row!, /^red\s+2\s+12\.5\s+3\.0\s+60\s+2\.0 MB/);
});

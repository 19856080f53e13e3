import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import {
  CommandHandle,
  Commands,
  HttpClient,
  Processes,
  WarrenConnectionError,
  WarrenError,
  toExecRequest,
} from '../../src/index';
import type { ExecEvent, ExecResult } from '@warren/protocol';
import {
  cutAt,
  ndjson,
  processInfo,
  sendChunks,
  sendError,
  sendJson,
  startFakeApi,
  type FakeApi,
} from '../helpers/fake-api';

let api: FakeApi;
let commands: Commands;
const base = '/v1/sandboxes/sbx_1';
const exit = {
  type: 'exit',
  exit_code: 3,
  signal: null,
  timed_out: false,
  duration_ms: 12,
} satisfies ExecEvent;
/** Events split mid-line, stdout and stderr interleaved. */
const interleaved = ndjson(
  { type: 'start', pid: 8 },
  { type: 'stdout', data: 'a' },
  { type: 'stderr', data: 'b' },
  { type: 'stdout', data: 'c' },
  exit,
).join('');
const interleavedPieces = cutAt(interleaved, [
  interleaved.indexOf('ta":"a"'), // in "data" of the first stdout line
  interleaved.indexOf('{"type":"stdout","data":"c"'), // between two lines
  interleaved.indexOf('{"type":"exit"') + 10, // inside the exit line
]);

before(async () => {
  api = await startFakeApi(async (req, res) => {
    const route = `${req.method} ${req.path}`;
    const body = req.body.length ? JSON.parse(req.body.toString()) : undefined;
    switch (route) {
      case `POST ${base}/exec`:
        return sendJson(res, 200, {
          pid: 7,
          exit_code: 0,
          signal: null,
          stdout: `ran ${body.cmd}`,
          stderr: '',
          timed_out: false,
          duration_ms: 5,
        } satisfies ExecResult);
      case `POST ${base}/exec/stream`:
        if (body.cmd === 'fail') {
          return sendChunks(
            res,
            ndjson(
              { type: 'start', pid: 8 },
              { type: 'error', code: 'CWD_NOT_FOUND', message: 'no /nope' },
            ),
          );
        }
        if (body.cmd === 'cut') return sendChunks(res, ndjson({ type: 'start', pid: 8 }));
        return sendChunks(res, interleavedPieces);
      case `POST ${base}/processes`:
        return sendJson(res, 201, processInfo(42));
      case `GET ${base}/processes/42/output`:
        return sendChunks(res, ndjson({ type: 'stdout', data: 'hi\n' }, exit));
      case `GET ${base}/processes/42`:
        return sendJson(res, 200, processInfo(42, { state: 'running' }));
      case `GET ${base}/processes/404`:
        return sendError(res, 'PROCESS_NOT_FOUND', 'no process 404', 404);
      case `POST ${base}/processes/42/stdin`:
      case `POST ${base}/processes/42/signal`:
        res.writeHead(204);
        return res.end();
      default:
        return sendError(res, 'NOT_FOUND', route, 404);
    }
  });
  const http = new HttpClient({ apiUrl: api.url, apiKey: 'k' });
  commands = new Commands(http, 'sbx_1', new Processes(http, 'sbx_1'));
});
after(() => api.close());

test('a bare command line runs through /bin/sh -c; with args the command is the program', () => {
  assert.deepEqual(toExecRequest('ls -la | wc -l').cmd, '/bin/sh');
  assert.deepEqual(toExecRequest('ls -la | wc -l').args, ['-c', 'ls -la | wc -l']);
  const req = toExecRequest('ls', { args: ['-la'], cwd: '/tmp', timeout: 5, env: { A: '1' } });
  assert.deepEqual(JSON.parse(JSON.stringify(req)), {
    cmd: 'ls',
    args: ['-la'],
    cwd: '/tmp',
    timeout: 5,
    env: { A: '1' },
  });
});

test('run() without callbacks posts to /exec and maps the result', async () => {
  const result = await commands.run('echo hi');
  assert.deepEqual(result, {
    pid: 7,
    exitCode: 0,
    stdout: 'ran /bin/sh',
    stderr: '',
    signal: null,
    timedOut: false,
    durationMs: 5,
  });
});

test('run() with callbacks streams chunks in order and returns the result at exit', async () => {
  const seen: string[] = [];
  const result = await commands.run('x', {
    onStdout: (d) => void seen.push(`out:${d}`),
    onStderr: (d) => void seen.push(`err:${d}`),
  });
  assert.equal(api.requests.at(-1)!.path, `${base}/exec/stream`);
  assert.deepEqual(seen, ['out:a', 'err:b', 'out:c']);
  assert.deepEqual(result, {
    pid: 8,
    exitCode: 3,
    stdout: 'ac',
    stderr: 'b',
    signal: null,
    timedOut: false,
    durationMs: 12,
  });
});

test('an error event becomes its WarrenError; a cut stream a connection error', async () => {
  const onStdout = () => {};
  await assert.rejects(commands.run('fail', { args: [], onStdout }), (err: unknown) => {
    return err instanceof WarrenError && err.code === 'CWD_NOT_FOUND';
  });
  await assert.rejects(commands.run('cut', { args: [], onStdout }), WarrenConnectionError);
});

test('background run returns a handle that waits, feeds stdin and signals', async () => {
  const seen: string[] = [];
  const handle = await commands.run('server', {
    background: true,
    onStdout: (d) => void seen.push(d),
  });
  assert.ok(handle instanceof CommandHandle);
  assert.equal(handle.pid, 42);
  assert.deepEqual(JSON.parse(api.requests.at(-1)!.body.toString()).args, ['-c', 'server']);

  const result = await handle.wait();
  assert.equal(result.exitCode, 3);
  assert.equal(result.stdout, 'hi\n');
  assert.deepEqual(seen, ['hi\n']);
  const output = api.requests.find((r) => r.path.endsWith('/output'))!;
  assert.equal(output.query.get('follow'), 'true');

  await handle.sendStdin('line\n');
  await handle.closeStdin();
  await handle.kill();
  const tail = api.requests.slice(-3).map((r) => [r.path.split('/').at(-1), r.body.toString()]);
  assert.deepEqual(tail, [
    ['stdin', '{"data":"line\\n"}'],
    ['stdin', '{"data":"","eof":true}'],
    ['signal', '{"signal":"SIGTERM"}'],
  ]);
});

test('connect() reattaches and fails fast for an unknown pid', async () => {
  const handle = await commands.connect(42);
  assert.equal((await handle.wait()).stdout, 'hi\n');
  await assert.rejects(commands.connect(404), (err: unknown) => {
    return err instanceof WarrenError && err.code === 'PROCESS_NOT_FOUND';
  });
});

/**
 * The code interpreter on real gVisor with a real Jupyter kernel (the
 * code-interpreter template): state in contexts, rich results (a matplotlib
 * PNG, a DataFrame as HTML and JSON, IPython.display), streams, errors,
 * cancel by timeout, by DELETE and by a client that leaves, a kernel that
 * dies, javascript and bash contexts, and bad input.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { Sandbox, WarrenError } from '@warren/sdk';
import type { CodeEvent } from '@warren/protocol';
import { mkdtempSync, rmSync } from 'node:fs';
import { createSandbox, runCli, startTestPlatform, type TestPlatform } from '../fixture';
import { waitFor } from '../wait';

/** Width and height from a PNG's IHDR chunk, after checking its signature. */
function pngSize(b64: string): { width: number; height: number } {
  const buf = Buffer.from(b64, 'base64');
  assert.deepEqual([...buf.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  assert.equal(buf.subarray(12, 16).toString('ascii'), 'IHDR');
  return { width: buf.readUInt32BE(16), height: buf.readUInt32BE(20) };
}

describe('code interpreter (real gVisor, real ipykernel)', () => {
  let p: TestPlatform;
  let id: string;
  let sbx: Sandbox;

  before(async () => {
    p = await startTestPlatform();
    id = await createSandbox(p, { template: 'code-interpreter' });
    sbx = await Sandbox.connect(id, { apiUrl: p.url, apiKey: p.adminToken });
  });

  after(async () => {
    try {
      if (id) await p.api(`/v1/sandboxes/${id}`, { method: 'DELETE' });
      await p.host.settle();
      assert.deepEqual(p.runscContainers(), []);
    } finally {
      await p.stop();
    }
  });

  it('keeps state in the default python context and counts executions', async () => {
    const first = await sbx.runCode('x = 41\nx');
    assert.equal(first.error, null);
    assert.equal(first.text, '41');
    assert.equal(first.language, 'python');
    const second = await sbx.runCode('x + 1');
    assert.equal(second.text, '42');
    assert.equal(second.contextId, first.contextId);
    assert.equal(second.executionCount, first.executionCount + 1);
    const contexts = await sbx.code.listContexts();
    const def = contexts.find((c) => c.id === first.contextId);
    assert.ok(def?.default, JSON.stringify(contexts));
  });

  it('streams stdout and stderr as they come', async () => {
    const events: string[] = [];
    const exe = await sbx.runCode(
      'import sys, time\nprint("one", flush=True)\ntime.sleep(0.3)\nprint("two", file=sys.stderr)',
      { onStdout: (t) => events.push(`out:${t}`), onStderr: (t) => events.push(`err:${t}`) },
    );
    assert.equal(exe.error, null);
    assert.deepEqual(events, ['out:one\n', 'err:two\n']);
    assert.deepEqual(exe.logs, { stdout: ['one\n'], stderr: ['two\n'] });
  });

  it('returns a matplotlib figure as a PNG that decodes', async () => {
    const exe = await sbx.runCode(
      [
        'import matplotlib.pyplot as plt',
        'fig = plt.figure(figsize=(4, 3), dpi=50)',
        'plt.plot([1, 2, 3], [1, 4, 9])',
        'plt.show()',
      ].join('\n'),
    );
    assert.equal(exe.error, null, JSON.stringify(exe.error));
    const png = exe.results.find((r) => r.png);
    assert.ok(png?.png, JSON.stringify(exe.results.map((r) => Object.keys(r.data))));
    assert.deepEqual(pngSize(png.png), { width: 200, height: 150 });
  });

  it('returns a DataFrame as HTML and JSON', async () => {
    const exe = await sbx.runCode(
      "import pandas as pd\npd.DataFrame({'a': [1, 2], 'b': ['x', 'y']})",
    );
    assert.equal(exe.error, null, JSON.stringify(exe.error));
    const main = exe.results.find((r) => r.isMainResult);
    assert.match(main?.html ?? '', /<table/);
    assert.deepEqual(main?.json, {
      columns: ['a', 'b'],
      index: [0, 1],
      data: [
        [1, 'x'],
        [2, 'y'],
      ],
    });
  });

  it('shows IPython.display output (HTML, SVG, JSON)', async () => {
    const exe = await sbx.runCode(
      [
        'from IPython.display import display, HTML, SVG, JSON',
        "display(HTML('<b>bold</b>'))",
        'display(SVG(\'<svg xmlns="http://www.w3.org/2000/svg" width="4" height="4"></svg>\'))',
        "display(JSON({'k': [1, 2]}))",
      ].join('\n'),
    );
    assert.equal(exe.error, null, JSON.stringify(exe.error));
    assert.equal(exe.results.length, 3);
    assert.equal(exe.results[0]?.html, '<b>bold</b>');
    assert.match(exe.results[1]?.svg ?? '', /<svg/);
    assert.deepEqual(exe.results[2]?.json, { k: [1, 2] });
    assert.ok(exe.results.every((r) => !r.isMainResult));
  });

  it('reports an exception with name, value and traceback', async () => {
    const errors: string[] = [];
    const exe = await sbx.runCode('def f():\n    raise ValueError("bad value")\nf()', {
      onError: (e) => errors.push(e.name),
    });
    assert.equal(exe.error?.name, 'ValueError');
    assert.equal(exe.error?.value, 'bad value');
    assert.match(exe.error?.traceback ?? '', /in f\b/);
    assert.deepEqual(errors, ['ValueError']);
  });

  it('interrupts an infinite loop on timeout; the context keeps its state', async () => {
    await sbx.runCode('kept = "still here"');
    const exe = await sbx.runCode('while True:\n    pass', { timeoutMs: 1500 });
    assert.equal(exe.cancelled, 'timeout');
    assert.equal(exe.error?.name, 'KeyboardInterrupt');
    const next = await sbx.runCode('kept');
    assert.equal(next.text, "'still here'");
  });

  it('interrupts a running execution on DELETE; the context keeps its state', async () => {
    let execId = '';
    const running = sbx.runCode('import time\nwhile True:\n    time.sleep(0.05)', {
      onStart: (s) => (execId = s.executionId),
    });
    await waitFor(() => execId !== '', { what: 'the run to start', timeoutMs: 120_000 });
    const del = await p.api(`/v1/sandboxes/${id}/code/executions/${execId}`, {
      method: 'DELETE',
    });
    assert.equal(del.status, 204);
    const exe = await running;
    assert.equal(exe.cancelled, 'interrupt');
    assert.equal(exe.error?.name, 'KeyboardInterrupt');
    assert.equal((await sbx.runCode('kept')).text, "'still here'");
    // Not running any more: a typed 404.
    const again = await p.api(`/v1/sandboxes/${id}/code/executions/${execId}`, {
      method: 'DELETE',
    });
    assert.equal(again.status, 404);
    assert.equal(
      ((await again.json()) as { error: { code: string } }).error.code,
      'EXECUTION_NOT_FOUND',
    );
  });

  it('interrupts the run of a client that disconnects; the kernel stays usable', async () => {
    const ctx = await sbx.code.createContext({ language: 'python' });
    await sbx.runCode('n = 7', { context: ctx });
    const abort = new AbortController();
    const res = await p.api(`/v1/sandboxes/${id}/code`, {
      method: 'POST',
      json: { code: 'while True:\n    pass', context_id: ctx.id },
      signal: abort.signal,
    });
    const reader = res.body!.getReader();
    const first = JSON.parse(new TextDecoder().decode((await reader.read()).value)) as CodeEvent;
    assert.equal(first.type, 'start');
    abort.abort();
    // The next run in that context is not stuck behind the loop.
    const next = await sbx.runCode('n * 6', { context: ctx, timeoutMs: 60_000 });
    assert.equal(next.error, null);
    assert.equal(next.text, '42');
    await sbx.code.deleteContext(ctx);
  });

  it('reports a kernel that dies and restarts it', async () => {
    const ctx = await sbx.code.createContext({ language: 'python' });
    await sbx.runCode('lost = 1', { context: ctx });
    const exe = await sbx.runCode('import os, signal\nos.kill(os.getpid(), signal.SIGKILL)', {
      context: ctx,
    });
    assert.equal(exe.error?.name, 'KernelDied');
    const next = await sbx.runCode('1 + 1', { context: ctx });
    assert.equal(next.text, '2');
    const gone = await sbx.runCode('lost', { context: ctx });
    assert.equal(gone.error?.name, 'NameError');
    await sbx.code.deleteContext(ctx);
  });

  it('restarts and deletes contexts', async () => {
    const ctx = await sbx.code.createContext({ language: 'python', cwd: '/tmp' });
    assert.equal(ctx.language, 'python');
    assert.equal(ctx.default, false);
    await sbx.runCode('y = 5', { context: ctx });
    assert.equal((await sbx.runCode('import os; os.getcwd()', { context: ctx })).text, "'/tmp'");
    const restarted = await sbx.code.restartContext(ctx);
    assert.equal(restarted.execution_count, 0);
    assert.equal((await sbx.runCode('y', { context: ctx })).error?.name, 'NameError');
    await sbx.code.deleteContext(ctx);
    assert.ok(!(await sbx.code.listContexts()).some((c) => c.id === ctx.id));
  });

  it('keeps state in javascript and bash contexts', async () => {
    const js = await sbx.code.createContext({ language: 'javascript' });
    const a = await sbx.runCode('let total = 40; console.log("js", total); total', {
      context: js,
    });
    assert.deepEqual(a.logs.stdout, ['js 40\n']);
    assert.equal(a.text, '40');
    assert.equal((await sbx.runCode('total + 2', { context: js })).text, '42');
    const thrown = await sbx.runCode('throw new TypeError("nope")', { context: js });
    assert.equal(thrown.error?.name, 'TypeError');
    const loop = await sbx.runCode('while (true) {}', { context: js, timeoutMs: 1500 });
    assert.equal(loop.cancelled, 'timeout');
    assert.equal((await sbx.runCode('total', { context: js })).text, '40');

    const sh = await sbx.runCode('COUNT=3; cd /tmp; echo "n=$COUNT"', { language: 'bash' });
    assert.deepEqual(sh.logs.stdout, ['n=3\n']);
    const sh2 = await sbx.runCode('echo "$COUNT $(pwd)"; echo warn >&2; false', {
      language: 'bash',
    });
    assert.deepEqual(sh2.logs.stdout, ['3 /tmp\n']);
    assert.deepEqual(sh2.logs.stderr, ['warn\n']);
    assert.equal(sh2.error?.name, 'ExitCode');
    const shLoop = await sbx.runCode('while true; do :; done', {
      language: 'bash',
      timeoutMs: 1500,
    });
    assert.equal(shLoop.cancelled, 'timeout');
    assert.deepEqual((await sbx.runCode('echo $COUNT', { language: 'bash' })).logs.stdout, ['3\n']);
    await sbx.code.deleteContext(js);
  });

  it('refuses bad input with typed errors', async () => {
    const code = async (res: Response) =>
      ((await res.json()) as { error: { code: string; message: string } }).error;
    const badLang = await p.api(`/v1/sandboxes/${id}/code`, {
      method: 'POST',
      json: { code: '1', language: 'cobol' },
    });
    assert.equal(badLang.status, 400);
    assert.equal((await code(badLang)).code, 'INVALID_REQUEST');
    const noCtx = await p.api(`/v1/sandboxes/${id}/code`, {
      method: 'POST',
      json: { code: '1', context_id: 'ctx_nope' },
    });
    assert.equal(noCtx.status, 404);
    assert.equal((await code(noCtx)).code, 'CONTEXT_NOT_FOUND');
    for (const [method, path] of [
      ['POST', 'contexts/ctx_nope/restart'],
      ['DELETE', 'contexts/ctx_nope'],
    ] as const) {
      const res = await p.api(`/v1/sandboxes/${id}/code/${path}`, { method });
      assert.equal(res.status, 404, path);
      assert.equal((await code(res)).code, 'CONTEXT_NOT_FOUND');
    }
    const js = await sbx.code.createContext({ language: 'javascript' });
    await assert.rejects(
      sbx.runCode('1', { context: js, language: 'python' }),
      (err: WarrenError) => err.code === 'INVALID_REQUEST',
    );
    await sbx.code.deleteContext(js);
    const noSandbox = await p.api(`/v1/sandboxes/sbx_nope/code`, {
      method: 'POST',
      json: { code: '1' },
    });
    assert.equal(noSandbox.status, 404);
  });

  it('names the code-interpreter template when the sandbox has no Jupyter kernel', async () => {
    const base = await createSandbox(p, { template: 'base' });
    try {
      const res = await p.api(`/v1/sandboxes/${base}/code`, {
        method: 'POST',
        json: { code: '1 + 1' },
      });
      assert.equal(res.status, 409);
      const err = ((await res.json()) as { error: { code: string; message: string } }).error;
      assert.equal(err.code, 'INTERPRETER_UNAVAILABLE');
      assert.match(err.message, /code-interpreter template/);
    } finally {
      await p.api(`/v1/sandboxes/${base}`, { method: 'DELETE' });
    }
  });

  it('runs code through the MCP run_code tool, with a PNG as an image item', async () => {
    const client = new Client({ name: 'warren-e2e', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${p.url}/mcp`), {
        requestInit: { headers: { authorization: `Bearer ${p.adminToken}` } },
      }),
    );
    try {
      const r = (await client.callTool({
        name: 'run_code',
        arguments: {
          sandbox_id: id,
          code: [
            'import matplotlib.pyplot as plt',
            'plt.figure(figsize=(2, 2), dpi=40)',
            'plt.plot([0, 1])',
            'plt.show()',
            'print("mcp")',
            '6 * 7',
          ].join('\n'),
        },
      })) as CallToolResult;
      assert.ok(!r.isError, JSON.stringify(r));
      const [first, ...rest] = r.content;
      assert.ok(first?.type === 'text');
      const summary = JSON.parse(first.text) as {
        stdout: string;
        error: unknown;
        results: Array<{ text?: string; is_main_result: boolean }>;
      };
      assert.equal(summary.stdout, 'mcp\n');
      assert.equal(summary.error, null);
      assert.equal(summary.results.find((x) => x.is_main_result)?.text, '42');
      const image = rest.find((c) => c.type === 'image');
      assert.ok(image?.type === 'image' && image.mimeType === 'image/png');
      assert.deepEqual(pngSize(image.data), { width: 80, height: 80 });
      const bad = (await client.callTool({
        name: 'run_code',
        arguments: { sandbox_id: id, code: '1', context_id: 'ctx_nope' },
      })) as CallToolResult;
      assert.ok(bad.isError);
      assert.match(JSON.stringify(bad.content), /CONTEXT_NOT_FOUND/);
    } finally {
      await client.close();
    }
  });

  it('runs code from the CLI: warren sandbox code', async () => {
    const tmp = mkdtempSync('/tmp/wt-cli-');
    try {
      const ok = await runCli(p, ['sandbox', 'code', id, 'print("cli")\n20 + 22'], tmp);
      assert.equal(ok.code, 0, ok.stderr);
      assert.equal(ok.stdout, 'cli\n42\n');
      const bad = await runCli(p, ['sandbox', 'code', id, 'echo $((1/0))', '-l', 'bash'], tmp);
      assert.equal(bad.code, 1);
      assert.match(bad.stderr, /division by 0/);
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  });
});

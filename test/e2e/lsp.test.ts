/**
 * Language servers on a real platform (gVisor) with the real pylsp of the
 * base template: a WebSocket client speaks LSP (initialize, didOpen,
 * definition, diagnostics), the compact calls answer path:line:col text, bad
 * input gets typed errors, and the server process is gone once the socket
 * closes or the warm server's idle limit passes.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { WebSocket } from 'ws';
import { Sandbox } from '@warren/sdk';
import { createWarrenMcpServer } from '@warren/sdk/mcp';
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { createSandbox, startTestPlatform, type TestPlatform } from '../fixture';
import { waitFor } from '../wait';

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any

const ROOT = '/root/proj';
const LIB = 'def greet(name):\n    """Say hello to someone."""\n    return "hi " + name\n';
const MAIN = 'from lib import greet\n\nprint(greet("x"))\nprint(greet("y"))\n';
const BAD = 'import os\n\n\ndef f():\n    return undefined_name\n';

/** A JSON-RPC client over one WebSocket: requests by id, notifications kept. */
class Client {
  private next = 1;
  private readonly pending = new Map<number, (m: Json) => void>();
  readonly notes: Json[] = [];
  readonly closed: Promise<{ code: number; reason: string }>;

  private constructor(readonly ws: WebSocket) {
    ws.on('message', (data: Buffer) => {
      const m = JSON.parse(data.toString('utf8'));
      if (m.id !== undefined && m.id !== null && this.pending.has(m.id)) {
        this.pending.get(m.id)!(m);
        this.pending.delete(m.id);
      } else this.notes.push(m);
    });
    this.closed = new Promise((resolve) =>
      ws.once('close', (code, reason) => resolve({ code, reason: reason.toString() })),
    );
  }

  static open(url: string, token?: string): Promise<Client> {
    const ws = new WebSocket(url, token ? { headers: { authorization: `Bearer ${token}` } } : {});
    const client = new Client(ws);
    return new Promise((resolve, reject) => {
      ws.once('open', () => resolve(client));
      ws.on('error', reject);
      ws.once('unexpected-response', (_req, res) => {
        let body = '';
        res.on('data', (d: Buffer) => (body += d.toString()));
        res.on('end', () => reject(new Error(`HTTP ${res.statusCode} ${body}`)));
      });
    });
  }

  request(method: string, params: unknown): Promise<Json> {
    const id = this.next++;
    this.ws.send(JSON.stringify({ jsonrpc: '2.0', id, method, params }));
    return new Promise((resolve) => this.pending.set(id, resolve));
  }

  notify(method: string, params: unknown): void {
    this.ws.send(JSON.stringify({ jsonrpc: '2.0', method, params }));
  }
}

describe('language servers (real gVisor, real pylsp)', () => {
  let p: TestPlatform;
  let id: string;
  let ws: string;

  const put = async (path: string, body: string) => {
    const res = await p.api(`/v1/sandboxes/${id}/files?path=${path}`, {
      method: 'PUT',
      headers: { 'content-type': 'application/octet-stream' },
      body,
    });
    assert.equal(res.status, 200, await res.text());
  };
  const call = async (action: string, body: Json, status = 200): Promise<Json> => {
    const res = await p.api(`/v1/sandboxes/${id}/lsp/${action}`, { method: 'POST', json: body });
    const out = (await res.json()) as Json;
    assert.equal(res.status, status, JSON.stringify(out));
    return out;
  };
  /** pylsp processes the guest agent runs now. */
  const running = async (): Promise<Json[]> => {
    const list = await p.json(`/v1/sandboxes/${id}/processes`);
    return list.items.filter((x: Json) => x.state === 'running' && /pylsp/.test(x.cmd));
  };

  before(async () => {
    p = await startTestPlatform({ lspIdleSeconds: 3 });
    id = await createSandbox(p, { template: 'base' });
    ws = `${p.url.replace('http', 'ws')}/v1/sandboxes/${id}/lsp`;
    await p.json(`/v1/sandboxes/${id}/files/mkdir`, {
      method: 'POST',
      json: { path: ROOT, parents: true },
    });
    await put(`${ROOT}/lib.py`, LIB);
    await put(`${ROOT}/main.py`, MAIN);
    await put(`${ROOT}/bad.py`, BAD);
  });

  after(async () => {
    try {
      if (id) await p.api(`/v1/sandboxes/${id}`, { method: 'DELETE' });
    } finally {
      await p.stop();
    }
  });

  it('a WebSocket client initializes, opens a file and finds a definition', async () => {
    const c = await Client.open(`${ws}?language=python&root=${ROOT}`, p.adminToken);
    try {
      const init = await c.request('initialize', {
        processId: null,
        rootUri: `file://${ROOT}`,
        capabilities: {},
      });
      assert.ok(init.result.capabilities.definitionProvider, JSON.stringify(init));
      c.notify('initialized', {});
      const uri = `file://${ROOT}/main.py`;
      c.notify('textDocument/didOpen', {
        textDocument: { uri, languageId: 'python', version: 1, text: MAIN },
      });
      const def = await c.request('textDocument/definition', {
        textDocument: { uri },
        position: { line: 2, character: 7 },
      });
      const loc = Array.isArray(def.result) ? def.result[0] : def.result;
      assert.equal(loc.uri, `file://${ROOT}/lib.py`);
      assert.deepEqual(loc.range.start, { line: 0, character: 4 });
      // Diagnostics of a file with an error arrive as a notification.
      const bad = `file://${ROOT}/bad.py`;
      c.notify('textDocument/didOpen', {
        textDocument: { uri: bad, languageId: 'python', version: 1, text: BAD },
      });
      const diag = await waitFor(
        () =>
          c.notes.find(
            (n) => n.method === 'textDocument/publishDiagnostics' && n.params.uri === bad,
          ),
        { what: 'diagnostics of bad.py', timeoutMs: 30_000 },
      );
      assert.ok(
        diag.params.diagnostics.some((d: Json) => /undefined_name/.test(d.message)),
        JSON.stringify(diag),
      );
      // A frame that is not JSON gets a JSON-RPC parse error and the connection goes on.
      c.ws.send('not json');
      await waitFor(() => c.notes.find((n) => n.error?.code === -32700), { what: 'parse error' });
      assert.equal((await running()).length, 1);
    } finally {
      c.ws.close();
    }
    await c.closed;
    await waitFor(async () => (await running()).length === 0, {
      what: 'the server gone after the socket closed',
      timeoutMs: 30_000,
    });
  });

  it('a frame over the limit closes the socket with 1009, and the server goes', async () => {
    const c = await Client.open(`${ws}?language=python&root=${ROOT}`, p.adminToken);
    c.ws.send(JSON.stringify({ jsonrpc: '2.0', method: 'x', params: 'y'.repeat(5 * 1024 * 1024) }));
    assert.equal((await c.closed).code, 1009);
    await waitFor(async () => (await running()).length === 0, {
      what: 'the server gone after a 1009 close',
      timeoutMs: 30_000,
    });
  });

  it('bad input is refused before the upgrade with typed errors', async () => {
    const refused = (url: string) =>
      Client.open(url, p.adminToken).then(
        (c) => {
          c.ws.close();
          throw new Error('upgrade accepted');
        },
        (err: Error) => err.message,
      );
    assert.match(await refused(`${ws}?language=cobol`), /^HTTP 400 .*INVALID_REQUEST/);
    assert.match(
      await refused(`${ws}?language=python&root=/no/such/dir`),
      /^HTTP 404 .*FILE_NOT_FOUND/,
    );
    // The base template has no TypeScript server: the error names what is missing.
    const ts = await refused(`${ws}?language=typescript&root=/root`);
    assert.match(ts, /^HTTP 409 .*LANGUAGE_SERVER_NOT_INSTALLED/);
    assert.match(ts, /typescript-language-server/);
    const info = await p.json(`/v1/sandboxes/${id}/lsp?language=python&root=${ROOT}`);
    assert.deepEqual(info, { language: 'python', root: ROOT, command: ['/usr/bin/pylsp'] });
  });

  it('a query token opens the WebSocket once', async () => {
    const t = await p.json(`/v1/sandboxes/${id}/lsp/token`, { method: 'POST', json: {} });
    assert.match(t.token, /^wlsp_/);
    const c = await Client.open(`${ws}?language=python&root=${ROOT}&token=${t.token}`);
    const init = await c.request('initialize', {
      processId: null,
      rootUri: null,
      capabilities: {},
    });
    assert.ok(init.result.capabilities);
    c.ws.close();
    await c.closed;
    await assert.rejects(
      Client.open(`${ws}?language=python&root=${ROOT}&token=${t.token}`),
      /HTTP 401/,
    );
  });

  it('the compact calls answer path:line:col text', async () => {
    const at = { language: 'python', root: ROOT };
    const def = await call('definition', { ...at, path: 'main.py', line: 3, col: 8 });
    assert.equal(def.text, `${ROOT}/lib.py:1:5`);
    assert.equal(def.count, 1);
    const refs = await call('references', { ...at, path: `${ROOT}/lib.py`, line: 1, col: 6 });
    const lines = refs.text.split('\n').sort();
    assert.deepEqual(lines, [
      `${ROOT}/lib.py:1:5`,
      `${ROOT}/main.py:1:17`,
      `${ROOT}/main.py:3:7`,
      `${ROOT}/main.py:4:7`,
    ]);
    const hover = await call('hover', { ...at, path: 'main.py', line: 3, col: 8 });
    assert.match(hover.text, /Say hello to someone/);
    const symbols = await call('symbols', { ...at, path: 'lib.py' });
    assert.match(symbols.text, new RegExp(`^${ROOT}/lib.py:1:1 function greet$`, 'm'));
    const diags = await call('diagnostics', { ...at, path: 'bad.py' });
    assert.match(diags.text, new RegExp(`^${ROOT}/bad.py:5:12: error: undefined name`, 'm'));
    assert.match(diags.text, /'os' imported but unused/);
    // A changed file is sent again: its new diagnostics, not the old ones.
    await put(`${ROOT}/bad.py`, 'x = 1\n');
    assert.equal((await call('diagnostics', { ...at, path: 'bad.py' })).text, '');
    await put(`${ROOT}/bad.py`, BAD);
  });

  it('the compact calls refuse bad input with typed errors', async () => {
    const at = { language: 'python', root: ROOT };
    const missing = await call('definition', { ...at, path: 'nope.py', line: 1, col: 1 }, 404);
    assert.equal(missing.error.code, 'FILE_NOT_FOUND');
    const far = await call('hover', { ...at, path: 'lib.py', line: 40, col: 1 }, 400);
    assert.equal(far.error.code, 'POSITION_OUT_OF_RANGE');
    const wide = await call('hover', { ...at, path: 'lib.py', line: 1, col: 80 }, 400);
    assert.equal(wide.error.code, 'POSITION_OUT_OF_RANGE');
    const noPos = await call('definition', { ...at, path: 'lib.py' }, 400);
    assert.equal(noPos.error.code, 'INVALID_REQUEST');
    const lang = await call('hover', { ...at, language: 'cobol', path: 'lib.py' }, 400);
    assert.equal(lang.error.code, 'INVALID_REQUEST');
    const rel = await call('symbols', { language: 'python', path: 'lib.py' }, 400);
    assert.equal(rel.error.code, 'INVALID_PATH');
    const ts = await call('symbols', { language: 'typescript', path: '/root/x.ts' }, 404);
    assert.equal(ts.error.code, 'FILE_NOT_FOUND');
    await put('/root/x.ts', 'const a = 1;\n');
    const noTs = await call('symbols', { language: 'typescript', path: '/root/x.ts' }, 409);
    assert.equal(noTs.error.code, 'LANGUAGE_SERVER_NOT_INSTALLED');
    assert.equal(noTs.error.details.missing, 'typescript-language-server');
  });

  it('the SDK speaks LSP over the WebSocket and makes the compact calls', async () => {
    const sbx = await Sandbox.connect(id, { apiUrl: p.url, apiKey: p.adminToken });
    const conn = await sbx.lsp.connect({ language: 'python', root: ROOT });
    try {
      const init = await conn.sendRequest<Json>('initialize', {
        processId: null,
        rootUri: `file://${ROOT}`,
        capabilities: {},
      });
      assert.ok(init.capabilities.hoverProvider);
    } finally {
      conn.dispose();
    }
    const def = await sbx.lsp.definition({
      language: 'python',
      path: `${ROOT}/main.py`,
      line: 4,
      col: 7,
    });
    assert.equal(def.text, `${ROOT}/lib.py:1:5`);
  });

  it("the MCP lsp group's tools return the compact text", async () => {
    const server = createWarrenMcpServer(
      { apiUrl: p.url, apiKey: p.adminToken },
      { groups: ['lsp'] },
    );
    const [a, b] = InMemoryTransport.createLinkedPair();
    await server.connect(a);
    const client = new McpClient({ name: 'lsp-e2e', version: '1' });
    await client.connect(b);
    try {
      const text = async (name: string, args: Json) => {
        const r = (await client.callTool({ name, arguments: { sandbox_id: id, ...args } })) as Json;
        assert.ok(!r.isError, JSON.stringify(r));
        return r.content[0].text as string;
      };
      const at = { language: 'python', root: ROOT };
      assert.equal(
        await text('lsp_definition', { ...at, path: 'main.py', line: 3, col: 8 }),
        `${ROOT}/lib.py:1:5`,
      );
      assert.match(
        await text('lsp_hover', { ...at, path: 'main.py', line: 3, col: 8 }),
        /Say hello/,
      );
      assert.match(await text('lsp_diagnostics', { ...at, path: 'bad.py' }), /undefined name/);
      const refs = await text('lsp_references', { ...at, path: 'lib.py', line: 1, col: 5 });
      assert.equal(refs.split('\n').length, 4);
      const bad = (await client.callTool({
        name: 'lsp_hover',
        arguments: { sandbox_id: id, ...at, path: 'lib.py', line: 99, col: 1 },
      })) as Json;
      assert.equal(bad.isError, true);
      assert.match(bad.content[0].text, /^POSITION_OUT_OF_RANGE: /);
    } finally {
      await client.close();
    }
  });

  it('a warm server stops after the idle limit', async () => {
    await call('symbols', { language: 'python', root: ROOT, path: 'lib.py' });
    await waitFor(async () => (await running()).length === 0, {
      what: 'the warm server gone after its idle limit (3 s here)',
      timeoutMs: 30_000,
    });
  });
});

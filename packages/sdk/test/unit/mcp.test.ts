/**
 * The MCP tools' logic against a fake API on loopback: tool groups, how exec
 * output is cut, the request each tool makes, and API errors as tool errors.
 * The real platform is driven in test/e2e/mcp.test.ts.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { ExecResult } from '@warren/protocol';
import { createWarrenMcpServer, parseToolGroups, type ToolGroup } from '../../src/mcp/index';
import { trim } from '../../src/mcp/result';
import { WarrenError } from '../../src/index';
import { sendError, sendJson, startFakeApi, type FakeApi } from '../helpers/fake-api';

let api: FakeApi;
const clients: Client[] = [];

before(async () => {
  api = await startFakeApi((req, res) => {
    if (req.path === '/v1/sandboxes/sbx_gone/exec')
      return sendError(res, 'SANDBOX_NOT_FOUND', 'sandbox sbx_gone does not exist', 404);
    if (req.path === '/v1/sandboxes/sbx_a/exec') {
      const out = 'x'.repeat(25_000);
      return sendJson(res, 200, {
        pid: 7,
        exit_code: 2,
        signal: null,
        stdout: out,
        stderr: 'boom\n',
        timed_out: false,
        duration_ms: 12,
      } satisfies ExecResult);
    }
    return sendError(res, 'NOT_FOUND', `no route ${req.method} ${req.path}`, 404);
  });
});

after(async () => {
  for (const c of clients) await c.close();
  await api.close();
});

async function connect(groups?: ToolGroup[]): Promise<Client> {
  const server = createWarrenMcpServer({ apiUrl: api.url, apiKey: 'wrn_test' }, { groups });
  const [a, b] = InMemoryTransport.createLinkedPair();
  await server.connect(a);
  const client = new Client({ name: 'unit', version: '1' });
  await client.connect(b);
  clients.push(client);
  return client;
}

const textOf = (r: CallToolResult) => (r.content[0] as { text: string }).text;

describe('MCP tools', () => {
  it('parses tool groups: default when none, unknown ones refused', () => {
    assert.deepEqual(parseToolGroups(undefined), ['default']);
    assert.deepEqual(parseToolGroups(' '), ['default']);
    assert.deepEqual(parseToolGroups('default, snapshots,default'), ['default', 'snapshots']);
    assert.deepEqual(parseToolGroups('databases'), ['databases']);
    assert.throws(
      () => parseToolGroups('default,shell'),
      (e: unknown) => e instanceof WarrenError && e.code === 'INVALID_REQUEST',
    );
  });

  it('offers only the groups asked for', async () => {
    const names = async (g?: ToolGroup[]) =>
      (await (await connect(g)).listTools()).tools.map((t) => t.name).sort();
    assert.equal((await names()).length, 9);
    assert.deepEqual(await names(['templates']), ['list_templates']);
    assert.deepEqual(await names(['lsp']), [
      'lsp_definition',
      'lsp_diagnostics',
      'lsp_hover',
      'lsp_references',
    ]);
    assert.deepEqual(await names(['databases']), [
      'create_database',
      'delete_database',
      'get_database_url',
      'list_databases',
    ]);
  });

  it('cuts long text to its head and tail and says how much it left out', () => {
    assert.deepEqual(trim('short', 10), { text: 'short', omitted: 0 });
    const t = trim('a'.repeat(5) + 'b'.repeat(10) + 'c'.repeat(5), 10);
    assert.equal(t.omitted, 10);
    assert.equal(t.text, 'aaaaa\n[... 10 characters omitted ...]\nccccc');
  });

  it('exec sends a shell line with the bearer key and reports the cut', async () => {
    const c = await connect();
    const r = (await c.callTool({
      name: 'exec',
      arguments: { sandbox_id: 'sbx_a', command: 'make test', timeout: 30, cwd: '/src' },
    })) as CallToolResult;
    assert.ok(!r.isError, textOf(r));
    const body = JSON.parse(textOf(r)) as Record<string, unknown>;
    assert.equal(body.exit_code, 2);
    assert.equal(body.stderr, 'boom\n');
    assert.equal(body.truncated, 'stdout: 5000 characters omitted from the middle');
    const req = api.requests.at(-1)!;
    assert.equal(req.headers.authorization, 'Bearer wrn_test');
    assert.deepEqual(JSON.parse(req.body.toString()), {
      cmd: '/bin/sh',
      args: ['-c', 'make test'],
      cwd: '/src',
      timeout: 30,
    });
  });

  it('returns API failures as tool errors starting with the code', async () => {
    const c = await connect();
    const r = (await c.callTool({
      name: 'exec',
      arguments: { sandbox_id: 'sbx_gone', command: 'true' },
    })) as CallToolResult;
    assert.equal(r.isError, true);
    assert.equal(textOf(r), 'SANDBOX_NOT_FOUND: sandbox sbx_gone does not exist');
  });
});

/**
 * The MCP server, driven by the official MCP client: over Streamable HTTP at
 * /mcp (with the caller's key: another organisation sees SANDBOX_NOT_FOUND),
 * and over stdio through `warren mcp`.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { REPO, startTestPlatform, type TestPlatform } from '../fixture';

const DEFAULT_TOOLS = [
  'create_sandbox',
  'exec',
  'get_preview_url',
  'kill_sandbox',
  'list_files',
  'list_sandboxes',
  'read_file',
  'run_code',
  'write_file',
];

function text(r: unknown): string {
  const content = (r as CallToolResult).content;
  const first = content[0];
  assert.ok(first && first.type === 'text', JSON.stringify(r));
  return first.text;
}

describe('MCP server (real gVisor)', () => {
  let p: TestPlatform;
  let otherOrgKey: string;
  let sandboxId: string | undefined;
  let restoredId: string | undefined;
  const clients: Client[] = [];
  const dirs: string[] = [];

  async function http(token: string, query = ''): Promise<Client> {
    const client = new Client({ name: 'warren-e2e', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(new URL(`${p.url}/mcp${query}`), {
      requestInit: { headers: { authorization: `Bearer ${token}` } },
    });
    await client.connect(transport);
    clients.push(client);
    return client;
  }
  const call = (c: Client, name: string, args: Record<string, unknown>) =>
    c.callTool({ name, arguments: args }) as Promise<CallToolResult>;
  async function okJson(c: Client, name: string, args: Record<string, unknown>) {
    const r = await call(c, name, args);
    assert.ok(!r.isError, text(r));
    return JSON.parse(text(r)) as Record<string, unknown>;
  }

  before(async () => {
    p = await startTestPlatform();
    const org = await p.json<{ id: string }>('/v1/orgs', { method: 'POST', json: { name: 'b' } });
    const key = await p.json<{ key: string }>('/v1/keys', {
      method: 'POST',
      json: {
        name: 'b',
        org_id: org.id,
        scopes: ['sandboxes:read', 'sandboxes:write', 'exec', 'files'],
      },
    });
    otherOrgKey = key.key;
  });

  after(async () => {
    for (const c of clients) await c.close().catch(() => undefined);
    for (const id of [sandboxId, restoredId])
      if (id) await p?.api(`/v1/sandboxes/${id}`, { method: 'DELETE' });
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
    await p?.stop();
  });

  it('lists the default tools; opt-in groups only when asked for', async () => {
    const names = (await (await http(p.adminToken)).listTools()).tools.map((t) => t.name);
    assert.deepEqual([...names].sort(), DEFAULT_TOOLS);
    const more = (await (await http(p.adminToken, '?tools=default,snapshots')).listTools()).tools;
    const moreNames = more.map((t) => t.name);
    for (const n of [...DEFAULT_TOOLS, 'snapshot_sandbox', 'fork_sandbox', 'restore_snapshot'])
      assert.ok(moreNames.includes(n), n);
    assert.ok(!moreNames.includes('list_templates'));
  });

  it('creates a sandbox, runs a command, writes, reads and lists files', async () => {
    const c = await http(p.adminToken);
    const sbx = await okJson(c, 'create_sandbox', {
      memory_mb: 128,
      ttl_seconds: 600,
      labels: { via: 'mcp' },
    });
    sandboxId = String(sbx.id);
    assert.equal(sbx.state, 'running');
    assert.deepEqual(sbx.labels, { via: 'mcp' });

    const run = await okJson(c, 'exec', { sandbox_id: sandboxId, command: 'echo hi' });
    assert.equal(run.exit_code, 0);
    assert.equal(run.stdout, 'hi\n');
    const failing = await okJson(c, 'exec', {
      sandbox_id: sandboxId,
      command: 'echo $GREETING >&2; pwd; exit 3',
      cwd: '/tmp',
      env: { GREETING: 'hello' },
    });
    assert.deepEqual([failing.exit_code, failing.stdout, failing.stderr], [3, '/tmp\n', 'hello\n']);
    const long = await okJson(c, 'exec', {
      sandbox_id: sandboxId,
      command: 'head -c 50000 /dev/zero | tr "\\0" a',
    });
    assert.match(String(long.truncated), /stdout: 30000 characters omitted/);

    const written = await okJson(c, 'write_file', {
      sandbox_id: sandboxId,
      path: '/tmp/mcp/note.txt',
      content: 'written over MCP\n',
    });
    assert.deepEqual(written, { path: '/tmp/mcp/note.txt', size: 17 });
    const read = await call(c, 'read_file', { sandbox_id: sandboxId, path: '/tmp/mcp/note.txt' });
    assert.equal(text(read), 'written over MCP\n');
    const listed = await call(c, 'list_files', { sandbox_id: sandboxId, path: '/tmp/mcp' });
    const entries = JSON.parse(text(listed)) as Array<{ name: string; type: string; size: number }>;
    assert.deepEqual(
      entries.map((e) => [e.name, e.type, e.size]),
      [['note.txt', 'file', 17]],
    );
    const preview = await okJson(c, 'get_preview_url', { sandbox_id: sandboxId, port: 3000 });
    assert.match(String(preview.url), new RegExp(`3000-${sandboxId}`));
  });

  it('answers API failures as tool errors starting with the error code', async () => {
    const c = await http(p.adminToken);
    const r = await call(c, 'exec', { sandbox_id: 'sbx_0000000000000000', command: 'true' });
    assert.equal(r.isError, true);
    assert.match(text(r), /^SANDBOX_NOT_FOUND: /);
    const invalid = await call(c, 'exec', { sandbox_id: 'sbx_0000000000000000' });
    assert.equal(invalid.isError, true);
    assert.match(text(invalid), /Input validation error/);
  });

  it("acts with the caller's key: another organisation's sandbox is not found", async () => {
    assert.ok(sandboxId);
    const c = await http(otherOrgKey);
    const r = await call(c, 'exec', { sandbox_id: sandboxId, command: 'echo hi' });
    assert.equal(r.isError, true);
    assert.match(text(r), /^SANDBOX_NOT_FOUND: /);
    const listed = JSON.parse(text(await call(c, 'list_sandboxes', {}))) as unknown[];
    assert.deepEqual(listed, []);
    // The tools' requests are audited under their own routes, with the calling key.
    type Event = { status: number; error_code: string | null; resource_id: string | null };
    const audit = await p.json<{ items: Event[] }>(
      `/v1/audit?action=${encodeURIComponent('POST /v1/sandboxes/:id/exec')}`,
    );
    const seen = audit.items.map((e) => [e.resource_id, e.status, e.error_code].join(' '));
    assert.ok(seen.includes(`${sandboxId} 200 `), seen.join(', '));
    assert.ok(seen.includes('sbx_0000000000000000 404 SANDBOX_NOT_FOUND'), seen.join(', '));
    // The MCP messages themselves change nothing and are not audited.
    const messages = await p.json<{ items: Event[] }>('/v1/audit?action=POST%20%2Fmcp');
    assert.deepEqual(messages.items, []);
  });

  it('refuses requests without a valid key (401), GET (405) and unknown tool groups (400)', async () => {
    const init = {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: {
        protocolVersion: '2025-06-18',
        capabilities: {},
        clientInfo: { name: 'x', version: '1' },
      },
    };
    const headers = { accept: 'application/json, text/event-stream' };
    for (const token of [null, 'wrn_not_a_key']) {
      const res = await p.api('/mcp', { method: 'POST', json: init, token, headers });
      assert.equal(res.status, 401);
      assert.equal(((await res.json()) as { error: { code: string } }).error.code, 'UNAUTHORIZED');
    }
    const get = await p.api('/mcp', { headers });
    assert.equal(get.status, 405);
    assert.equal(get.headers.get('allow'), 'POST');
    await get.arrayBuffer();
    const bad = await p.api('/mcp?tools=default,nope', { method: 'POST', json: init, headers });
    assert.equal(bad.status, 400);
    assert.equal(((await bad.json()) as { error: { code: string } }).error.code, 'INVALID_REQUEST');
  });

  it('serves the same tools over stdio with `warren mcp`', async () => {
    assert.ok(sandboxId);
    const home = mkdtempSync('/tmp/wt-mcp-home-');
    dirs.push(home);
    const client = new Client({ name: 'warren-e2e-stdio', version: '1.0.0' });
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [join(REPO, 'packages/cli/bin/warren.js'), 'mcp', '--tools', 'default,templates'],
      env: {
        PATH: process.env.PATH ?? '',
        WARREN_API: p.url,
        WARREN_API_KEY: p.adminToken,
        WARREN_HOME: home,
      },
      stderr: 'pipe',
    });
    await client.connect(transport);
    clients.push(client);
    const names = (await client.listTools()).tools.map((t) => t.name);
    assert.deepEqual([...names].sort(), [...DEFAULT_TOOLS, 'list_templates'].sort());
    const r = (await client.callTool({
      name: 'exec',
      arguments: { sandbox_id: sandboxId, command: 'cat /tmp/mcp/note.txt' },
    })) as CallToolResult;
    assert.ok(!r.isError, text(r));
    assert.equal((JSON.parse(text(r)) as { stdout: string }).stdout, 'written over MCP\n');
    const templates = await client.callTool({ name: 'list_templates', arguments: {} });
    const listed = JSON.parse(text(templates)) as Array<{ name: string; state: string }>;
    assert.ok(
      listed.some((t) => t.name === 'base' && t.state === 'ready'),
      text(templates),
    );
  });

  it('snapshots a sandbox and restores it into a new one (snapshots group)', async () => {
    assert.ok(sandboxId);
    const c = await http(p.adminToken, '?tools=snapshots');
    const snap = await okJson(c, 'snapshot_sandbox', { sandbox_id: sandboxId });
    assert.match(String(snap.id), /^snap_/);
    const restored = await okJson(c, 'restore_snapshot', {
      snapshot_id: snap.id,
      ttl_seconds: 600,
    });
    restoredId = String(restored.id);
    assert.equal(restored.snapshot_id, snap.id);
    const d = await http(p.adminToken);
    const run = await okJson(d, 'exec', {
      sandbox_id: restoredId,
      command: 'cat /tmp/mcp/note.txt',
    });
    assert.equal(run.stdout, 'written over MCP\n');
    assert.equal(
      text(await call(d, 'kill_sandbox', { sandbox_id: restoredId })),
      `killed ${restoredId}`,
    );
    restoredId = undefined;
  });

  it('kills the sandbox', async () => {
    assert.ok(sandboxId);
    const c = await http(p.adminToken);
    assert.equal(
      text(await call(c, 'kill_sandbox', { sandbox_id: sandboxId })),
      `killed ${sandboxId}`,
    );
    const res = await p.api(`/v1/sandboxes/${sandboxId}`);
    const state = res.status === 404 ? 'gone' : ((await res.json()) as { state: string }).state;
    assert.ok(['gone', 'stopped'].includes(state), state);
    sandboxId = undefined;
  });
});

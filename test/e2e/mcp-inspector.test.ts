/**
 * The MCP server as the MCP Inspector's CLI mode sees it (the client people
 * use to try a server by hand), over Streamable HTTP at /mcp and over stdio
 * through `warren mcp`.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { REPO, createSandbox, startTestPlatform, type TestPlatform } from '../fixture';

const run = promisify(execFile);
// The CLI client itself (build/cli.js only forwards to it, with a deprecation notice).
const INSPECTOR = join(
  createRequire(import.meta.url)
    .resolve('@modelcontextprotocol/inspector-cli/package.json')
    .replace(/package\.json$/, ''),
  'build/index.js',
);

interface ToolResult {
  content: Array<{ type: string; text?: string }>;
  isError?: boolean;
}

describe('MCP server through the MCP Inspector CLI (real gVisor)', () => {
  let p: TestPlatform;
  let sandboxId: string;
  let home: string;

  /** Runs the Inspector CLI; resolves with its JSON answer (it prints JSON on stdout). */
  async function inspector(args: string[], env: NodeJS.ProcessEnv = {}): Promise<unknown> {
    const { stdout } = await run(process.execPath, [INSPECTOR, ...args], {
      // It finds its own package.json relative to the working directory.
      cwd: dirname(INSPECTOR),
      timeout: 60_000,
      env: { PATH: process.env.PATH ?? '', ...env },
    });
    return JSON.parse(stdout);
  }
  const overHttp = (token: string, args: string[]) =>
    inspector([
      `${p.url}/mcp`,
      '--transport',
      'http',
      '--header',
      `Authorization: Bearer ${token}`,
      ...args,
    ]);
  const overStdio = (args: string[]) =>
    inspector(
      // The server's program, the Inspector's options, then after `--` the program's arguments.
      [
        process.execPath,
        '--transport',
        'stdio',
        ...args,
        '--',
        join(REPO, 'packages/cli/bin/warren.js'),
        'mcp',
      ],
      { WARREN_API: p.url, WARREN_API_KEY: p.adminToken, WARREN_HOME: home },
    );
  const toolNames = (r: unknown) =>
    (r as { tools: Array<{ name: string }> }).tools.map((t) => t.name);

  before(async () => {
    p = await startTestPlatform();
    home = mkdtempSync('/tmp/wt-mcp-inspector-');
    sandboxId = await createSandbox(p);
  });

  after(async () => {
    if (sandboxId) await p?.api(`/v1/sandboxes/${sandboxId}`, { method: 'DELETE' });
    if (home) rmSync(home, { recursive: true, force: true });
    await p?.stop();
  });

  it('lists the tools with their input schemas over HTTP and stdio', async () => {
    for (const listed of [
      await overHttp(p.adminToken, ['--method', 'tools/list']),
      await overStdio(['--method', 'tools/list']),
    ]) {
      const names = toolNames(listed);
      for (const name of ['create_sandbox', 'exec', 'list_sandboxes', 'read_file', 'write_file'])
        assert.ok(names.includes(name), `${name} in ${names.join(', ')}`);
      const exec = (listed as { tools: Array<{ name: string; inputSchema: unknown }> }).tools.find(
        (t) => t.name === 'exec',
      );
      const schema = exec?.inputSchema as { properties?: Record<string, unknown> };
      assert.ok(schema.properties?.sandbox_id && schema.properties.command, JSON.stringify(exec));
    }
  });

  it('runs a command in a sandbox with tools/call, over HTTP and stdio', async () => {
    const args = [
      '--method',
      'tools/call',
      '--tool-name',
      'exec',
      '--tool-arg',
      `sandbox_id=${sandboxId}`,
      'command=echo inspected; uname -n',
    ];
    for (const r of [await overHttp(p.adminToken, args), await overStdio(args)]) {
      const result = r as ToolResult;
      assert.ok(!result.isError, JSON.stringify(r));
      const out = JSON.parse(result.content[0]?.text ?? '{}') as {
        stdout: string;
        exit_code: number;
      };
      assert.equal(out.exit_code, 0);
      assert.match(out.stdout, /^inspected\n/);
    }
  });

  it('reports a platform error as a tool error with its code, and a bad key as a failure', async () => {
    const r = (await overHttp(p.adminToken, [
      '--method',
      'tools/call',
      '--tool-name',
      'exec',
      '--tool-arg',
      'sandbox_id=sbx_doesnotexist',
      'command=echo never',
    ])) as ToolResult;
    assert.equal(r.isError, true);
    assert.match(r.content[0]?.text ?? '', /^SANDBOX_NOT_FOUND/);
    await assert.rejects(overHttp('wrn_not_a_key', ['--method', 'tools/list']), /UNAUTHORIZED/);
  });
});

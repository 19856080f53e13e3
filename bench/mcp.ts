/**
 * MCP tool call overhead: `exec` of `true` as an MCP tool call, over the
 * API's Streamable HTTP endpoint (/mcp, tools run in-process) and over stdio
 * (`warren mcp`, tools call the REST API), beside the same exec on the REST
 * route, and a list_sandboxes call beside GET /v1/sandboxes (MCP's own cost,
 * without exec's variance). One sandbox; the three take turns so a busy moment falls on all alike.
 * Run: node --import tsx bench/mcp.ts (BENCH_MCP_RUNS, default 100).
 */
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { REPO, createSandbox, startTestPlatform } from '../test/fixture';
import { now, printTable } from './stats';

const RUNS = Number(process.env.BENCH_MCP_RUNS ?? 100);
const WARMUP = 10;

async function main(): Promise<void> {
  const p = await startTestPlatform();
  const clients: Client[] = [];
  try {
    const id = await createSandbox(p, { template: 'base', memory_mb: 128 });
    const http = new Client({ name: 'bench', version: '1' });
    await http.connect(
      new StreamableHTTPClientTransport(new URL(`${p.url}/mcp`), {
        requestInit: { headers: { authorization: `Bearer ${p.adminToken}` } },
      }),
    );
    clients.push(http);
    const stdio = new Client({ name: 'bench', version: '1' });
    await stdio.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [join(REPO, 'packages/cli/bin/warren.js'), 'mcp'],
        env: {
          PATH: process.env.PATH ?? '',
          WARREN_API: p.url,
          WARREN_API_KEY: p.adminToken,
          WARREN_HOME: p.home,
        },
      }),
    );
    clients.push(stdio);

    const tool = (c: Client) => async () => {
      const r = (await c.callTool({
        name: 'exec',
        arguments: { sandbox_id: id, command: 'true' },
      })) as CallToolResult;
      if (r.isError) throw new Error(JSON.stringify(r.content));
    };
    const rest = () =>
      p.json(`/v1/sandboxes/${id}/exec`, {
        method: 'POST',
        json: { cmd: '/bin/sh', args: ['-c', 'true'] },
      });
    // A call with no sandbox work in it: what MCP itself adds, without exec's variance.
    const list = (c: Client) => async () => {
      const r = (await c.callTool({ name: 'list_sandboxes', arguments: {} })) as CallToolResult;
      if (r.isError) throw new Error(JSON.stringify(r.content));
    };
    const restList = () => p.json('/v1/sandboxes');
    const fns = [tool(http), tool(stdio), rest, list(http), restList];
    for (let i = 0; i < WARMUP; i++) for (const fn of fns) await fn();
    const samples = fns.map((): number[] => []);
    for (let i = 0; i < RUNS; i++)
      for (const [n, fn] of fns.entries()) {
        const t = now();
        await fn();
        samples[n]!.push(now() - t);
      }
    const [viaHttp, viaStdio, viaRest, listHttp, listRest] = samples as number[][] as [
      number[],
      number[],
      number[],
      number[],
      number[],
    ];
    console.log(
      `\nWarren MCP tool call overhead — ${RUNS} calls each, ${new Date().toISOString()}\n`,
    );
    const base = { unit: 'ms', direct: viaRest, directName: 'REST POST /exec (sh -c true)' };
    printTable([
      { name: 'MCP exec `true`, Streamable HTTP /mcp', warren: viaHttp, ...base },
      { name: 'MCP exec `true`, stdio (warren mcp)', warren: viaStdio, ...base },
      {
        name: 'MCP list_sandboxes, Streamable HTTP /mcp',
        unit: 'ms',
        warren: listHttp,
        direct: listRest,
        directName: 'REST GET /v1/sandboxes',
      },
    ]);
    await p.api(`/v1/sandboxes/${id}`, { method: 'DELETE' });
  } finally {
    for (const c of clients) await c.close().catch(() => undefined);
    await p.stop();
  }
}

await main();

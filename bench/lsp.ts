/**
 * `node --import tsx bench/lsp.ts`: language server calls through Warren, on
 * one platform and one sandbox of the base template (pylsp):
 *
 * - cold compact call: the first `definition` of a root (the warm server
 *   starts: `command -v`, the process, `initialize`, `didOpen`, the request);
 * - warm compact call: `definition` again on the warm server (the file is read
 *   from the sandbox each time, and is unchanged);
 * - WebSocket round trip: one `textDocument/definition` request over an open
 *   LSP WebSocket until its answer.
 *
 * BENCH_LSP_ROUNDS sets the warm samples (default 50); cold samples use a new
 * root each (BENCH_LSP_COLD, default 5).
 */
import { WebSocket } from 'ws';
import { createSandbox, startTestPlatform } from '../test/fixture';
import { median, now, percentile } from './stats';

const ROUNDS = Number(process.env.BENCH_LSP_ROUNDS ?? 50);
const COLD = Number(process.env.BENCH_LSP_COLD ?? 5);
const LIB = 'def greet(name):\n    return "hi " + name\n';
const MAIN = 'from lib import greet\n\nprint(greet("x"))\n';

function report(name: string, xs: number[]): void {
  const f = (n: number) => `${n.toFixed(1)} ms`;
  console.log(
    `${name.padEnd(28)} n=${String(xs.length).padEnd(4)} median ${f(median(xs))}  p95 ${f(percentile(xs, 95))}`,
  );
}

async function main(): Promise<void> {
  const p = await startTestPlatform({});
  try {
    const id = await createSandbox(p, { template: 'base' });
    const put = async (path: string, body: string) => {
      const res = await p.api(`/v1/sandboxes/${id}/files?path=${path}`, {
        method: 'PUT',
        headers: { 'content-type': 'application/octet-stream' },
        body,
      });
      if (res.status !== 200) throw new Error(await res.text());
    };
    for (let i = 0; i < COLD; i++) {
      await put(`/root/p${i}/lib.py`, LIB);
      await put(`/root/p${i}/main.py`, MAIN);
    }
    const definition = async (root: string) => {
      const started = now();
      const res = await p.api(`/v1/sandboxes/${id}/lsp/definition`, {
        method: 'POST',
        json: { language: 'python', root, path: 'main.py', line: 3, col: 8 },
      });
      const body = (await res.json()) as { text: string };
      if (body.text !== `${root}/lib.py:1:5`) throw new Error(JSON.stringify(body));
      return now() - started;
    };
    const cold: number[] = [];
    for (let i = 0; i < COLD; i++) cold.push(await definition(`/root/p${i}`));
    const warm: number[] = [];
    for (let i = 0; i < ROUNDS; i++) warm.push(await definition('/root/p0'));

    const ws = new WebSocket(
      `${p.url.replace('http', 'ws')}/v1/sandboxes/${id}/lsp?language=python&root=/root/p0`,
      { headers: { authorization: `Bearer ${p.adminToken}` } },
    );
    await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
    let next = 1;
    const request = (method: string, params: unknown) =>
      new Promise<unknown>((resolve) => {
        const mine = next++;
        const onMessage = (data: Buffer) => {
          const m = JSON.parse(data.toString()) as { id?: number };
          if (m.id !== mine) return;
          ws.off('message', onMessage);
          resolve(m);
        };
        ws.on('message', onMessage);
        ws.send(JSON.stringify({ jsonrpc: '2.0', id: mine, method, params }));
      });
    await request('initialize', { processId: null, rootUri: 'file:///root/p0', capabilities: {} });
    ws.send(JSON.stringify({ jsonrpc: '2.0', method: 'initialized', params: {} }));
    const uri = 'file:///root/p0/main.py';
    ws.send(
      JSON.stringify({
        jsonrpc: '2.0',
        method: 'textDocument/didOpen',
        params: { textDocument: { uri, languageId: 'python', version: 1, text: MAIN } },
      }),
    );
    const rt: number[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      const started = now();
      await request('textDocument/definition', {
        textDocument: { uri },
        position: { line: 2, character: 7 },
      });
      rt.push(now() - started);
    }
    ws.close();
    report('cold compact definition', cold);
    report('warm compact definition', warm);
    report('WebSocket definition', rt);
  } finally {
    await p.stop();
  }
}

await main();

/**
 * The TypeScript language server on a real platform (gVisor): the
 * `typescript` template (Node.js 18 from Debian, typescript-language-server
 * and TypeScript installed from npm at build) answers the compact calls and
 * speaks LSP over the WebSocket through the SDK.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Sandbox } from '@warren/sdk';
import { createSandbox, startTestPlatform, type TestPlatform } from '../fixture';
import { waitFor } from '../wait';

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any

const ROOT = '/root/ts';
const LIB = "export function greet(name: string): string {\n  return 'hi ' + name;\n}\n";
const MAIN = "import { greet } from './lib';\n\nconst n: number = greet('x');\n";

describe('the TypeScript language server (real gVisor, typescript template)', () => {
  let p: TestPlatform;
  let id: string;

  before(async () => {
    p = await startTestPlatform({ lspIdleSeconds: 3 });
    id = await createSandbox(p, { template: 'typescript' });
    for (const [name, body] of [
      // A project file: tsserver then knows every file of the root, open or not.
      ['tsconfig.json', '{"compilerOptions": {"strict": true}, "include": ["*.ts"]}\n'],
      ['lib.ts', LIB],
      ['main.ts', MAIN],
    ] as const) {
      const res = await p.api(`/v1/sandboxes/${id}/files?path=${ROOT}/${name}`, {
        method: 'PUT',
        headers: { 'content-type': 'application/octet-stream' },
        body,
      });
      assert.equal(res.status, 200, await res.text());
    }
  });

  after(async () => {
    try {
      if (id) await p.api(`/v1/sandboxes/${id}`, { method: 'DELETE' });
    } finally {
      await p.stop();
    }
  });

  it('answers diagnostics, references, definition and symbols as text', async () => {
    const sbx = await Sandbox.connect(id, { apiUrl: p.url, apiKey: p.adminToken });
    const at = { language: 'typescript' as const, root: ROOT };
    const diags = await sbx.lsp.diagnostics({ ...at, path: 'main.ts' });
    assert.match(
      diags.text,
      new RegExp(
        `^${ROOT}/main.ts:3:7: error: Type 'string' is not assignable to type 'number'`,
        'm',
      ),
    );
    // main.ts is open now, so tsserver finds its uses.
    const refs = await sbx.lsp.references({ ...at, path: 'lib.ts', line: 1, col: 17 });
    assert.deepEqual(refs.text.split('\n').sort(), [
      `${ROOT}/lib.ts:1:17`,
      `${ROOT}/main.ts:1:10`,
      `${ROOT}/main.ts:3:19`,
    ]);
    const def = await sbx.lsp.definition({ ...at, path: 'main.ts', line: 3, col: 20 });
    assert.equal(def.text, `${ROOT}/lib.ts:1:17`);
    const symbols = await sbx.lsp.symbols({ ...at, path: 'lib.ts' });
    assert.match(symbols.text, /lib\.ts:1:\d+ function greet$/m);
  });

  it('speaks LSP over the WebSocket', async () => {
    const sbx = await Sandbox.connect(id, { apiUrl: p.url, apiKey: p.adminToken });
    const conn = await sbx.lsp.connect({ language: 'typescript', root: ROOT });
    try {
      const init = await conn.sendRequest<Json>('initialize', {
        processId: null,
        rootUri: `file://${ROOT}`,
        capabilities: {},
      });
      assert.ok(init.capabilities.definitionProvider);
    } finally {
      conn.dispose();
    }
    await waitFor(
      async () => {
        const list = await p.json(`/v1/sandboxes/${id}/processes`);
        return !list.items.some(
          (x: Json) => x.state === 'running' && /typescript-language-server/.test(x.cmd),
        );
      },
      { what: 'no typescript-language-server left running', timeoutMs: 30_000 },
    );
  });
});

/**
 * The opt-in `lsp` tool group: a language server's answers about code in a
 * sandbox (definition, references, hover, diagnostics), as the compact text
 * of the API's /lsp calls (`path:line:col` lines), never raw LSP payloads.
 */
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { LspAction, LspActionResult } from '@warren/protocol';
import { z } from 'zod';
import type { ConnectionOptions } from '../config';
import { Sandbox } from '../sandbox';
import { sandboxId } from './describe';
import { guarded, ok } from './result';

const language = z
  .enum(['python', 'typescript'])
  .describe('The language: python (pylsp) or typescript (typescript-language-server)');
const path = z
  .string()
  .min(1)
  .describe('The file in the sandbox: absolute, or relative to root, e.g. "/root/app/main.py"');
const root = z
  .string()
  .min(1)
  .describe("The project's directory (default: the file's directory)")
  .optional();
const line = z.number().int().min(1).describe('1-based line');
const col = z.number().int().min(1).describe('1-based column');

/** The answer as text; a note when there was none or only the first results are listed. */
function answer(r: LspActionResult, none: string): string {
  if (!r.text) return none;
  return r.truncated ? `${r.text}\n[first results of ${r.count}]` : r.text;
}

export function registerLspTools(server: McpServer, conn: ConnectionOptions): void {
  interface Args {
    sandbox_id: string;
    language: 'python' | 'typescript';
    path: string;
    root?: string;
    line?: number;
    col?: number;
  }
  const run = (action: LspAction, none: string) => (a: Args) =>
    guarded(async () => {
      const sbx = await Sandbox.connect(a.sandbox_id, conn);
      const r = await sbx.lsp.call(action, {
        language: a.language,
        path: a.path,
        root: a.root,
        line: a.line,
        col: a.col,
      });
      return ok(answer(r, none));
    });
  const base = { sandbox_id: sandboxId, language, path, root };
  const tool = (action: LspAction, description: string, positional: boolean, none: string) => {
    if (positional)
      server.registerTool(
        `lsp_${action}`,
        { description, inputSchema: { ...base, line, col } },
        run(action, none),
      );
    else
      server.registerTool(`lsp_${action}`, { description, inputSchema: base }, run(action, none));
  };
  tool(
    'definition',
    'Where the symbol at line:col of a file in the sandbox is defined, from its language server. Returns `path:line:col` lines (1-based).',
    true,
    'no definition found',
  );
  tool(
    'references',
    'Every use of the symbol at line:col of a file in the sandbox, its definition included. Returns `path:line:col` lines (1-based).',
    true,
    'no references found',
  );
  tool(
    'hover',
    'The type, signature and documentation of what is at line:col of a file in the sandbox, as plain text.',
    true,
    'nothing at this position',
  );
  tool(
    'diagnostics',
    "A file's errors and warnings from its language server (pyflakes for python). Returns `path:line:col: severity: message` lines.",
    false,
    'no diagnostics',
  );
}

/**
 * run_code (a default tool): runs code in the sandbox's code interpreter and
 * returns its output as MCP content: one text item with JSON a model can read
 * (stdout, stderr, error, each result's text, HTML and JSON), then one image
 * item per PNG result (a matplotlib figure), so a client shows the picture.
 */
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import type { HttpClient } from '../client';
import { runCode } from '../code';
import { sandboxId } from './describe';
import { MAX_OUTPUT_CHARS, guarded, trim } from './result';

export function registerCodeTool(server: McpServer, http: HttpClient): void {
  server.registerTool(
    'run_code',
    {
      description: `Run code in a sandbox's code interpreter (the sandbox must come from the "code-interpreter" template) and wait for it. State persists between calls in the same context: variables, imports, functions. python runs on a Jupyter kernel (numpy, pandas, matplotlib installed): the value of the last line is returned as a result, DataFrames as HTML and JSON, matplotlib figures (plt.show()) as PNG images. Returns JSON {execution_count, stdout, stderr, error: {name, value, traceback} | null, results: [{is_main_result, text, html, json, has_image}], cancelled} followed by one image per PNG. Output is cut to ${MAX_OUTPUT_CHARS} characters per field.`,
      inputSchema: {
        sandbox_id: sandboxId,
        code: z
          .string()
          .describe(
            'The code to run, e.g. "import pandas as pd\\ndf = pd.DataFrame(...)\\ndf.describe()".',
          ),
        language: z.enum(['python', 'javascript', 'bash']).optional().describe('Default: python.'),
        context_id: z
          .string()
          .optional()
          .describe("A context made through the API; default: the language's default context."),
        timeout: z
          .number()
          .positive()
          .optional()
          .describe('Seconds after which the run is interrupted (the state stays). Default: 300.'),
      },
      annotations: { destructiveHint: true, openWorldHint: false },
    },
    (args, extra) =>
      guarded(async () => {
        const exe = await runCode(http, args.sandbox_id, args.code, {
          language: args.language,
          context: args.context_id,
          timeoutMs: args.timeout !== undefined ? Math.round(args.timeout * 1000) : undefined,
          signal: extra.signal,
        });
        const cut = (s: string | undefined) => (s === undefined ? undefined : trim(s).text);
        const summary = {
          execution_count: exe.executionCount,
          stdout: cut(exe.logs.stdout.join('')),
          stderr: cut(exe.logs.stderr.join('')),
          error: exe.error && { ...exe.error, traceback: cut(exe.error.traceback) },
          results: exe.results.map((r) => ({
            is_main_result: r.isMainResult,
            text: cut(r.text),
            html: cut(r.html),
            json: r.json,
            has_image: r.png !== undefined,
          })),
          cancelled: exe.cancelled,
        };
        const content: CallToolResult['content'] = [
          { type: 'text', text: JSON.stringify(summary, null, 2) },
        ];
        for (const r of exe.results)
          if (r.png) content.push({ type: 'image', data: r.png, mimeType: 'image/png' });
        return { content };
      }),
  );
}

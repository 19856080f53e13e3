/**
 * The default tools: sandbox lifecycle, commands, files, preview URLs and run_code (tools-code.ts).
 * Each is one or two SDK calls; descriptions say what comes back and in which
 * units, so a model can call them right the first time.
 */
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { HttpClient } from '../client';
import { Commands } from '../commands';
import type { ConnectionOptions } from '../config';
import { Files } from '../files';
import { Processes } from '../processes';
import { Sandbox } from '../sandbox';
import { registerCodeTool } from './tools-code';
import { labels, sandboxId, sandboxSummary, ttlSeconds } from './describe';
import { MAX_OUTPUT_CHARS, guarded, ok, trim } from './result';

const path = z
  .string()
  .min(1)
  .describe('Absolute path inside the sandbox, e.g. "/home/user/app.py".');

export function registerDefaultTools(server: McpServer, conn: ConnectionOptions): void {
  const http = new HttpClient(conn);
  registerCodeTool(server, http);

  server.registerTool(
    'create_sandbox',
    {
      description:
        'Create a new isolated Linux sandbox (gVisor) and wait until it is running. Returns JSON with its `id` (pass it to the other tools), state, template, cpu, memory_mb, ttl_seconds, expires_at and labels. The sandbox is destroyed after ttl_seconds without activity, or by kill_sandbox.',
      inputSchema: {
        template: z
          .string()
          .min(1)
          .max(64)
          .optional()
          .describe(
            'Template (image) to start from. Default "base" (Debian 12 minimal with python3; 1 vCPU, 512 MiB).',
          ),
        memory_mb: z
          .number()
          .int()
          .min(1)
          .optional()
          .describe("Memory limit in MiB. Default: the template's default; at most its maximum."),
        ttl_seconds: ttlSeconds.optional(),
        labels: labels.optional(),
      },
      annotations: { destructiveHint: false, openWorldHint: false },
    },
    (args) =>
      guarded(async () => {
        const sbx = await Sandbox.create({
          ...conn,
          template: args.template,
          memoryMb: args.memory_mb,
          ttlSeconds: args.ttl_seconds,
          metadata: args.labels,
        });
        return ok(sandboxSummary(sbx.info));
      }),
  );

  server.registerTool(
    'list_sandboxes',
    {
      description:
        'List the sandboxes this API key can see. Returns a JSON array of {id, state, template, memory_mb, ttl_seconds, expires_at, labels, ...}.',
      inputSchema: {
        state: z
          .enum(['creating', 'running', 'paused', 'hibernated', 'stopping', 'stopped', 'error'])
          .optional()
          .describe('Only sandboxes in this state.'),
        labels: labels.optional().describe('Only sandboxes that have all of these labels.'),
      },
      annotations: { readOnlyHint: true },
    },
    (args) =>
      guarded(async () => {
        const items = await Sandbox.list({ ...conn, state: args.state, metadata: args.labels });
        return ok(items.map(sandboxSummary));
      }),
  );

  server.registerTool(
    'kill_sandbox',
    {
      description:
        'Destroy a sandbox now: its processes and files are gone for good. Returns "killed <id>".',
      inputSchema: { sandbox_id: sandboxId },
      annotations: { destructiveHint: true, idempotentHint: true },
    },
    (args) =>
      guarded(async () => {
        await Sandbox.kill(args.sandbox_id, conn);
        return ok(`killed ${args.sandbox_id}`);
      }),
  );

  server.registerTool(
    'exec',
    {
      description: `Run a shell command line in a sandbox (through /bin/sh -c, so pipes and && work) and wait for it to exit. Returns JSON {exit_code, stdout, stderr, timed_out, signal, duration_ms}. exit_code 127: command not found; 128+N: killed by signal N. stdout and stderr are each cut to ${MAX_OUTPUT_CHARS} characters (head and tail kept, with a note saying how much was left out). For long-running servers, start them in the background (e.g. "nohup cmd > /tmp/log 2>&1 &").`,
      inputSchema: {
        sandbox_id: sandboxId,
        command: z.string().min(1).describe('Shell command line, e.g. "python3 main.py | head".'),
        timeout: z
          .number()
          .positive()
          .optional()
          .describe(
            'Seconds after which the command is killed (timed_out: true). Default: no limit.',
          ),
        cwd: z
          .string()
          .optional()
          .describe(
            "Working directory (absolute path). Default: the template's working directory.",
          ),
        env: z
          .record(z.string(), z.string())
          .optional()
          .describe('Extra environment variables for this command only.'),
      },
      annotations: { destructiveHint: true, openWorldHint: false },
    },
    (args, extra) =>
      guarded(async () => {
        const commands = new Commands(http, args.sandbox_id, new Processes(http, args.sandbox_id));
        const r = await commands.run(args.command, {
          timeout: args.timeout,
          cwd: args.cwd,
          env: args.env,
          signal: extra.signal,
        });
        const stdout = trim(r.stdout);
        const stderr = trim(r.stderr);
        const notes = [
          stdout.omitted && `stdout: ${stdout.omitted} characters omitted from the middle`,
          stderr.omitted && `stderr: ${stderr.omitted} characters omitted from the middle`,
        ].filter(Boolean);
        return ok({
          exit_code: r.exitCode,
          stdout: stdout.text,
          stderr: stderr.text,
          timed_out: r.timedOut,
          signal: r.signal,
          duration_ms: r.durationMs,
          ...(notes.length > 0 && { truncated: notes.join('; ') }),
        });
      }),
  );

  server.registerTool(
    'read_file',
    {
      description: `Read a text file from a sandbox. Returns its content as UTF-8 text, cut to ${MAX_OUTPUT_CHARS} characters (head and tail kept) with a note at the top when it was longer. For binary files, use exec with e.g. "base64 FILE" or "xxd FILE | head".`,
      inputSchema: { sandbox_id: sandboxId, path },
      annotations: { readOnlyHint: true },
    },
    (args) =>
      guarded(async () => {
        const text = await new Files(http, args.sandbox_id).read(args.path);
        const t = trim(text);
        return ok(
          t.omitted
            ? `[${args.path}: ${text.length} characters, ${t.omitted} omitted from the middle]\n${t.text}`
            : t.text,
        );
      }),
  );

  server.registerTool(
    'write_file',
    {
      description:
        'Create or replace a file in a sandbox with the given text (UTF-8); missing parent directories are created. Returns JSON {path, size} with the size in bytes.',
      inputSchema: {
        sandbox_id: sandboxId,
        path,
        content: z.string().describe('The whole new content of the file.'),
        mode: z
          .string()
          .regex(/^[0-7]{3,4}$/)
          .optional()
          .describe('Permission bits in octal, e.g. "755" for a script. Default "644".'),
      },
      annotations: { destructiveHint: true, idempotentHint: true },
    },
    (args) =>
      guarded(async () =>
        ok(
          await new Files(http, args.sandbox_id).write(args.path, args.content, {
            mode: args.mode,
          }),
        ),
      ),
  );

  server.registerTool(
    'list_files',
    {
      description:
        'List a directory in a sandbox. Returns a JSON array of {name, type ("file", "dir" or "symlink"), size (bytes), mode (octal), mtime}.',
      inputSchema: {
        sandbox_id: sandboxId,
        path: path.describe('Absolute path of a directory in the sandbox, e.g. "/home/user".'),
      },
      annotations: { readOnlyHint: true },
    },
    (args) =>
      guarded(async () => {
        const items = await new Files(http, args.sandbox_id).list(args.path);
        return ok(
          items.map((f) => ({
            name: f.name,
            type: f.type,
            size: f.size,
            mode: f.mode,
            mtime: f.mtime,
          })),
        );
      }),
  );

  server.registerTool(
    'get_preview_url',
    {
      description:
        'The public URL of a TCP port a server inside the sandbox listens on (start the server with exec first, listening on 0.0.0.0). Returns JSON {url, preview_auth}; when preview_auth is true, requests need the preview token given at creation.',
      inputSchema: {
        sandbox_id: sandboxId,
        port: z
          .number()
          .int()
          .min(1)
          .max(65535)
          .describe('Port number inside the sandbox, e.g. 3000.'),
      },
      annotations: { readOnlyHint: true },
    },
    (args) =>
      guarded(async () => {
        const sbx = await Sandbox.connect(args.sandbox_id, conn);
        return ok({ url: sbx.getPreviewUrl(args.port), preview_auth: sbx.info.preview_auth });
      }),
  );
}

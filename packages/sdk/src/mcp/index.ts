/**
 * @warren/sdk/mcp: a Model Context Protocol server whose tools drive Warren
 * through this SDK. `warren mcp` serves it over stdio; the API serves it over
 * Streamable HTTP at /mcp with the caller's own key. Built on the official
 * @modelcontextprotocol/sdk, which implements the protocol, both transports and
 * input validation (zod schemas, sent to clients as JSON Schema).
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { WarrenError } from '@warren/protocol';
import type { ConnectionOptions } from '../config';
import { registerDefaultTools } from './tools-default';
import { registerLspTools } from './tools-lsp';
import { registerDatabaseTools, registerSnapshotTools, registerTemplateTools } from './tools-optin';

export { MAX_OUTPUT_CHARS } from './result';

export const TOOL_GROUPS = ['default', 'snapshots', 'databases', 'templates', 'lsp'] as const;
export type ToolGroup = (typeof TOOL_GROUPS)[number];

const REGISTER: Record<ToolGroup, (server: McpServer, conn: ConnectionOptions) => void> = {
  default: registerDefaultTools,
  snapshots: registerSnapshotTools,
  databases: registerDatabaseTools,
  templates: registerTemplateTools,
  lsp: registerLspTools,
};

/**
 * Parses a comma-separated list of groups ("default,snapshots"); empty or
 * undefined means the default group. Unknown names are refused, not ignored.
 */
export function parseToolGroups(spec: string | undefined): ToolGroup[] {
  const names = (spec ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (names.length === 0) return ['default'];
  for (const name of names) {
    if (!(TOOL_GROUPS as readonly string[]).includes(name))
      throw new WarrenError(
        'INVALID_REQUEST',
        `unknown MCP tool group "${name}"; the groups are ${TOOL_GROUPS.join(', ')}`,
      );
  }
  return [...new Set(names as ToolGroup[])];
}

export interface WarrenMcpOptions {
  /** Which tool groups to offer; default ['default']. */
  groups?: ToolGroup[];
  version?: string;
}

/** An MCP server whose tools act with `conn` (the API URL and the key to send). */
export function createWarrenMcpServer(
  conn: ConnectionOptions,
  opts: WarrenMcpOptions = {},
): McpServer {
  const server = new McpServer(
    { name: 'warren', version: opts.version ?? '0.1.0' },
    {
      instructions:
        'Warren runs isolated Linux sandboxes (gVisor). Create one with create_sandbox, run commands with exec, move text with write_file / read_file, and kill_sandbox when done. Failed calls return an error whose text starts with an error code such as SANDBOX_NOT_FOUND.',
    },
  );
  for (const group of opts.groups ?? ['default']) REGISTER[group](server, conn);
  return server;
}

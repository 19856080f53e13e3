/**
 * `warren mcp`: serves Warren's tools to an MCP client (Claude Desktop, an
 * editor, an agent framework) over stdio, acting with the usual connection
 * (--api/--token, $WARREN_API/$WARREN_API_KEY, the admin token file). Stdout
 * carries the protocol only; nothing else may be printed there.
 */
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { createWarrenMcpServer, parseToolGroups } from '@warren/sdk/mcp';
import type { Command } from 'commander';
import { connection } from '../../connection';

export function register(program: Command, version: string): void {
  program
    .command('mcp')
    .description('serve Warren tools to an MCP client over stdio (see docs/mcp.md)')
    .option(
      '--tools <groups>',
      'comma-separated tool groups: default, snapshots, databases, templates (default: $WARREN_MCP_TOOLS, else default)',
    )
    .action(async (opts: { tools?: string }, cmd: Command) => {
      const groups = parseToolGroups(opts.tools ?? process.env.WARREN_MCP_TOOLS);
      const server = createWarrenMcpServer(connection(cmd), { groups, version });
      // Served until the client closes our stdin (or the transport fails).
      const done = new Promise<void>((resolve) => {
        process.stdin.once('end', resolve);
        process.stdin.once('close', resolve);
      });
      await server.connect(new StdioServerTransport(process.stdin, process.stdout));
      server.server.onclose = () => process.stdin.destroy();
      await done;
      await server.close();
    });
}

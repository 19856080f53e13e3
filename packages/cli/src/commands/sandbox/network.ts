/**
 * `warren sandbox network <id>`: shows the egress policy, or replaces it with
 * --mode/--allow/--deny. `warren sandbox egress <id>`: the egress log.
 */
import { Sandbox, type NetworkPolicy } from '@warren/sdk';
import type { Command } from 'commander';
import { parsePositiveInt } from '../../args';
import { connection } from '../../connection';
import type { Io } from '../../io';

const collect = (value: string, previous: string[] = []) => [...previous, value];

interface NetworkOptions {
  mode?: NetworkPolicy['mode'];
  allow?: string[];
  deny?: string[];
}

export function register(sandbox: Command, io: Io): void {
  sandbox
    .command('network')
    .description('show the egress policy of a sandbox, or replace it with --mode')
    .argument('<id>', 'sandbox id')
    .option('--mode <mode>', 'none, restricted or open: replaces the policy')
    .option('--allow <rule>', 'allow rule (repeatable), e.g. pypi.org:443, 10.0.0.0/8', collect)
    .option('--deny <rule>', 'deny rule (repeatable)', collect)
    .action(async (id: string, opts: NetworkOptions, cmd: Command) => {
      const sbx = await Sandbox.connect(id, connection(cmd));
      const view = opts.mode
        ? await sbx.network.set({ mode: opts.mode, allow: opts.allow, deny: opts.deny })
        : await sbx.network.get();
      io.stdout.write(`${JSON.stringify(view, null, 2)}\n`);
    });

  sandbox
    .command('egress')
    .description("list a sandbox's egress decisions, newest first")
    .argument('<id>', 'sandbox id')
    .option('--denied', 'only denied connections')
    .option('--limit <n>', 'how many (default 100)', parsePositiveInt)
    .option('--json', 'print the events as JSON')
    .action(async (id: string, opts: { denied?: boolean; limit?: number; json?: boolean }, cmd) => {
      const sbx = await Sandbox.connect(id, connection(cmd as Command));
      const events = await sbx.network.log({
        decision: opts.denied ? 'denied' : undefined,
        limit: opts.limit,
      });
      if (opts.json) return void io.stdout.write(`${JSON.stringify(events, null, 2)}\n`);
      for (const e of events)
        io.stdout.write(
          `${e.at}  ${e.decision.padEnd(7)}  ${e.protocol.padEnd(7)}  ${e.host}:${e.port}  out ${e.bytes_out} in ${e.bytes_in}  ${e.reason}\n`,
        );
    });
}

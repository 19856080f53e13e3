/**
 * One language server process in a sandbox, spoken to through HostApi's
 * background processes: its stdin takes `Content-Length` framed JSON-RPC
 * (written one message per stdin call, in order), its stdout is parsed back
 * into messages by vscode-jsonrpc's StreamMessageReader. Nothing runs in the
 * guest agent for this but the process itself.
 */
import { PassThrough } from 'node:stream';
import {
  LSP_SERVERS,
  WarrenError,
  type ExecEvent,
  type HostApi,
  type LspLanguage,
} from '@warren/protocol';
import { AbstractMessageWriter, type Message, type MessageWriter } from 'vscode-jsonrpc';
import { StreamMessageReader } from 'vscode-jsonrpc/node';

/** How the process ended: its exit, or null when the sandbox's agent went away first. */
export type ServerEnd = { exit_code: number; signal: string | null } | null;

/** Frames each message and hands it to the process's stdin, one call at a time. */
class StdinMessageWriter extends AbstractMessageWriter implements MessageWriter {
  private chain: Promise<void> = Promise.resolve();

  constructor(private readonly send: (data: string) => Promise<void>) {
    super();
  }

  write(msg: Message): Promise<void> {
    const json = JSON.stringify(msg);
    const framed = `Content-Length: ${Buffer.byteLength(json, 'utf8')}\r\n\r\n${json}`;
    const next = this.chain.then(() => this.send(framed));
    this.chain = next.catch((err: unknown) => this.fireError(err, msg));
    return next;
  }

  end(): void {}
}

/** Whether the server's program is on the sandbox's PATH; LANGUAGE_SERVER_NOT_INSTALLED if not. */
export async function checkInstalled(host: HostApi, id: string, language: LspLanguage) {
  const server = LSP_SERVERS[language];
  const events = await host.processes.exec(id, {
    cmd: '/bin/sh',
    args: ['-c', 'command -v "$0"', server.cmd],
    timeout_ms: 30_000,
  });
  let code = -1;
  let path = '';
  for await (const e of events) {
    if (e.type === 'stdout') path += e.data;
    if (e.type === 'exit') code = e.exit_code;
  }
  if (code !== 0)
    throw new WarrenError(
      'LANGUAGE_SERVER_NOT_INSTALLED',
      `the ${language} language server is not installed in this sandbox: ${server.cmd} is not on PATH (install ${server.package}, or use a template that has it)`,
      { language, missing: server.cmd, package: server.package },
    );
  return path.trim();
}

/** Checks that `root` is a directory in the sandbox (FILE_NOT_FOUND, NOT_A_DIRECTORY). */
export async function checkRoot(host: HostApi, id: string, root: string): Promise<void> {
  const info = await host.files.stat(id, root);
  if (info.type !== 'dir')
    throw new WarrenError('NOT_A_DIRECTORY', `root ${root} is not a directory`);
}

export class LanguageServerProcess {
  /** Messages from the server. */
  readonly reader: StreamMessageReader;
  /** Messages to the server. */
  readonly writer: MessageWriter;
  /** Resolves when the process has exited, or its output stream ended. */
  readonly ended: Promise<ServerEnd>;
  private stderr = '';
  private done = false;
  private exited = false;

  private constructor(
    private readonly host: HostApi,
    readonly sandboxId: string,
    readonly pid: number,
    output: AsyncIterable<ExecEvent>,
    private readonly abort: AbortController,
  ) {
    const stdout = new PassThrough();
    this.reader = new StreamMessageReader(stdout, 'utf-8');
    this.writer = new StdinMessageWriter((data) =>
      host.processes.writeStdin(sandboxId, pid, { data }),
    );
    this.ended = (async (): Promise<ServerEnd> => {
      let end: ServerEnd = null;
      try {
        for await (const e of output) {
          if (e.type === 'stdout') stdout.write(Buffer.from(e.data, 'utf8'));
          else if (e.type === 'stderr') this.stderr = (this.stderr + e.data).slice(-4000);
          else if (e.type === 'exit') {
            end = { exit_code: e.exit_code, signal: e.signal };
            this.exited = true;
          }
        }
      } catch {
        // the agent's stream broke: the same as its going away
      }
      this.done = true;
      stdout.end();
      return end;
    })();
  }

  /** The last lines the server wrote to stderr (for error messages). */
  get stderrTail(): string {
    return this.stderr.trim().split('\n').slice(-5).join('\n');
  }

  get running(): boolean {
    return !this.done;
  }

  /**
   * Starts the server of `language` in `root`, after checking both: a missing
   * program is LANGUAGE_SERVER_NOT_INSTALLED, a missing root FILE_NOT_FOUND.
   */
  static async start(
    host: HostApi,
    id: string,
    language: LspLanguage,
    root: string,
  ): Promise<LanguageServerProcess> {
    await checkRoot(host, id, root);
    const path = await checkInstalled(host, id, language);
    const server = LSP_SERVERS[language];
    const info = await host.processes.start(id, {
      cmd: path || server.cmd,
      args: [...server.args],
      cwd: root,
      background: true,
    });
    if (info.state !== 'running')
      throw new WarrenError(
        'LANGUAGE_SERVER_FAILED',
        `${server.cmd} exited at once (exit code ${info.exit_code})`,
      );
    const abort = new AbortController();
    const output = await host.processes
      .output(id, info.pid, { follow: true, signal: abort.signal })
      .catch(async (err: unknown) => {
        await host.processes.signal(id, info.pid, { signal: 'SIGKILL' }).catch(() => undefined);
        throw err;
      });
    return new LanguageServerProcess(host, id, info.pid, output, abort);
  }

  /** Kills the process (SIGKILL to its group) and waits for its end; safe to repeat. */
  async stop(): Promise<void> {
    // Also when the stream ended without an exit (a pause): the process may still be there.
    if (!this.exited)
      await this.host.processes
        .signal(this.sandboxId, this.pid, { signal: 'SIGKILL' })
        .catch(() => undefined);
    this.abort.abort();
    await this.ended;
    this.reader.dispose();
    this.writer.dispose();
  }
}

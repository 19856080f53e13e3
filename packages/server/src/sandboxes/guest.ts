/**
 * What runs inside a sandbox: processes and files. Each call resolves the
 * sandbox (waking it if need be, counting the call as activity) and goes to
 * its host through HostApi; nothing of the guest channel comes back here.
 */
import type { Duplex, Readable } from 'node:stream';
import type {
  ExecEvent,
  ExecRequest,
  FileInfo,
  FileList,
  FileWatchEvent,
  GuestProcessStart,
  HostApi,
  HostCodeApi,
  MkdirRequest,
  ProcessInfo,
  RenameRequest,
  SignalRequest,
  StdinRequest,
  WriteResult,
} from '@warren/protocol';
import type { SandboxLifecycle } from './lifecycle';

function toGuest(body: ExecRequest): GuestProcessStart {
  return {
    cmd: body.cmd,
    args: body.args ?? [],
    env: body.env,
    cwd: body.cwd,
    stdin: body.stdin,
    timeout_ms: body.timeout !== undefined ? Math.round(body.timeout * 1000) : undefined,
    user: body.user,
  };
}

export class SandboxGuest {
  constructor(
    private readonly host: HostApi,
    private readonly lifecycle: SandboxLifecycle,
  ) {}

  private async use(orgId: string, id: string): Promise<string> {
    return (await this.lifecycle.use(orgId, id)).id;
  }

  /** Runs a command and yields its events; aborting `signal` before the exit kills it. */
  async exec(
    orgId: string,
    id: string,
    body: ExecRequest,
    signal?: AbortSignal,
  ): Promise<AsyncIterable<ExecEvent>> {
    return this.host.processes.exec(await this.use(orgId, id), toGuest(body), { signal });
  }

  async start(orgId: string, id: string, body: ExecRequest): Promise<ProcessInfo> {
    return this.host.processes.start(await this.use(orgId, id), toGuest(body));
  }

  async processes(orgId: string, id: string): Promise<ProcessInfo[]> {
    return this.host.processes.list(await this.use(orgId, id));
  }

  async process(orgId: string, id: string, pid: number): Promise<ProcessInfo> {
    return this.host.processes.get(await this.use(orgId, id), pid);
  }

  async output(
    orgId: string,
    id: string,
    pid: number,
    o: { follow: boolean; signal?: AbortSignal },
  ): Promise<AsyncIterable<ExecEvent>> {
    return this.host.processes.output(await this.use(orgId, id), pid, o);
  }

  async writeStdin(orgId: string, id: string, pid: number, req: StdinRequest): Promise<void> {
    await this.host.processes.writeStdin(await this.use(orgId, id), pid, req);
  }

  async signal(orgId: string, id: string, pid: number, req: SignalRequest): Promise<void> {
    await this.host.processes.signal(await this.use(orgId, id), pid, req);
  }

  async readFile(orgId: string, id: string, path: string) {
    return this.host.files.read(await this.use(orgId, id), path);
  }

  async writeFile(
    orgId: string,
    id: string,
    path: string,
    body: Readable,
    mode?: string,
  ): Promise<WriteResult> {
    return this.host.files.write(await this.use(orgId, id), path, body, mode);
  }

  async list(orgId: string, id: string, path: string): Promise<FileList> {
    return this.host.files.list(await this.use(orgId, id), path);
  }

  async stat(orgId: string, id: string, path: string): Promise<FileInfo> {
    return this.host.files.stat(await this.use(orgId, id), path);
  }

  async mkdir(orgId: string, id: string, req: MkdirRequest): Promise<FileInfo> {
    return this.host.files.mkdir(await this.use(orgId, id), req);
  }

  async rename(orgId: string, id: string, req: RenameRequest): Promise<FileInfo> {
    return this.host.files.rename(await this.use(orgId, id), req);
  }

  async remove(orgId: string, id: string, path: string, recursive: boolean): Promise<void> {
    await this.host.files.remove(await this.use(orgId, id), path, recursive);
  }

  /** Watches a directory until `signal` aborts; FILE_NOT_FOUND / NOT_A_DIRECTORY first. */
  async watch(
    orgId: string,
    id: string,
    path: string,
    o: { recursive: boolean; signal: AbortSignal },
  ): Promise<AsyncIterable<FileWatchEvent>> {
    return this.host.files.watch(await this.use(orgId, id), path, o);
  }

  /** A connection to a port in a sandbox already resolved by the caller (preview URLs). */
  openPort(id: string, port: number): Promise<Duplex> {
    return this.host.sandboxes.openPort(id, port);
  }

  /** The code interpreter of a sandbox (resolved and woken as for any call) and its host's calls. */
  async code(orgId: string, id: string): Promise<{ sandbox: string; api: HostCodeApi }> {
    return { sandbox: await this.use(orgId, id), api: this.host.code };
  }

  /** Counts the end of a long operation (an exec that ran for minutes) as activity. */
  activity(orgId: string, id: string): Promise<void> {
    return this.lifecycle.activity(orgId, id);
  }
}

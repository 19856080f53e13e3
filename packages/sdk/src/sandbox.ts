/**
 * A sandbox and its lifecycle: static create/connect/list, and per instance
 * `commands`, `files` and `processes`.
 */
import type {
  CreateSandboxRequest,
  PreviewToken,
  EgressSecret,
  NetworkPolicy,
  Sandbox as SandboxInfo,
  SandboxMetrics,
  SandboxList,
  SandboxState,
  Snapshot,
} from '@warren/protocol';
import { HttpClient } from './client';
import { Commands } from './commands';
import type { ConnectionOptions } from './config';
import { Files } from './files';
import { Network } from './network';
import { Processes } from './processes';
import { sandboxMetrics, type MetricsOptions } from './usage';
import { Lsp } from './lsp';
import { Pty } from './pty';
import { Code, runCode, type Execution, type RunCodeOptions } from './code';

export interface SandboxCreateOptions extends ConnectionOptions {
  /** Template name; the server defaults to 'base'. */
  template?: string;
  metadata?: Record<string, string>;
  /** Environment for every command in the sandbox. */
  env?: Record<string, string>;
  /** Destroyed after this many seconds without API activity (server default 3600). */
  ttlSeconds?: number;
  cpu?: number;
  memoryMb?: number;
  /** Never reaped by the TTL; hibernated after `idleTimeoutSeconds` idle instead. */
  persistent?: boolean;
  idleTimeoutSeconds?: number;
  /** Continue from this snapshot (processes, memory, files) instead of a template. */
  fromSnapshot?: string;
  /** Preview URLs need the preview token (`sandbox.previewToken` after create). */
  previewAuth?: boolean;
  /** Egress policy; the server default (WARREN_NETWORK_DEFAULT) is `{ mode: 'none' }`. */
  network?: NetworkPolicy;
  /** Headers the host-side proxy adds to requests to a host; they never enter the sandbox. */
  secrets?: EgressSecret[];
  /** Size limit of what the sandbox writes to its files, in MiB. */
  diskMb?: number;
  /** Volumes to attach; a writable one is exclusive to this sandbox. */
  volumes?: Array<{ name: string; mount_path: string; read_only?: boolean }>;
}

export interface ForkOptions {
  metadata?: Record<string, string>;
  ttlSeconds?: number;
}

export interface SandboxListOptions extends ConnectionOptions {
  state?: SandboxState;
  /** Only sandboxes whose metadata has all of these key/value pairs. */
  metadata?: Record<string, string>;
}

export interface SandboxPageOptions extends SandboxListOptions {
  /** Page size, 1..500 (server default 50). */
  limit?: number;
  cursor?: string;
}

export interface SandboxPage {
  items: SandboxInfo[];
  nextCursor: string | null;
}

const path = (id: string) => `/v1/sandboxes/${encodeURIComponent(id)}`;

export class Sandbox {
  readonly id: string;
  /** Last known state; refresh with getInfo(). */
  info: SandboxInfo;
  readonly commands: Commands;
  readonly files: Files;
  readonly processes: Processes;
  readonly network: Network;
  /** Terminal sessions (a process on a pseudo-terminal, viewed over WebSockets). */
  readonly pty: Pty;
  /** The code interpreter's contexts and interrupts (runCode runs code). */
  readonly code: Code;
  /** Language servers: an LSP connection, and compact calls answered as text. */
  readonly lsp: Lsp;
  readonly #http: HttpClient;
  #previewToken: string | undefined;

  private constructor(http: HttpClient, info: SandboxInfo) {
    this.#http = http;
    this.id = info.id;
    this.info = info;
    this.#previewToken = info.preview_token;
    this.processes = new Processes(http, info.id);
    this.commands = new Commands(http, info.id, this.processes);
    this.files = new Files(http, info.id);
    this.network = new Network(http, info.id);
    this.pty = new Pty(http, info.id);
    this.code = new Code(http, info.id);
    this.lsp = new Lsp(http, info.id);
  }

  /** Runs code in the code interpreter (python by default) and collects its events. */
  runCode(code: string, opts: RunCodeOptions = {}): Promise<Execution> {
    return runCode(this.#http, this.id, code, opts);
  }

  /** Creates a sandbox: `create()`, `create({ template: 'base', ... })` or `create('base', opts)`. */
  static async create(
    templateOrOpts?: string | SandboxCreateOptions,
    opts: SandboxCreateOptions = {},
  ): Promise<Sandbox> {
    const o =
      typeof templateOrOpts === 'string'
        ? { ...opts, template: templateOrOpts }
        : (templateOrOpts ?? opts);
    const http = new HttpClient(o);
    // Only the fields that were given; the server fills in its defaults.
    const req: Partial<CreateSandboxRequest> = {
      template: o.template,
      metadata: o.metadata,
      env: o.env,
      ttl_seconds: o.ttlSeconds,
      cpu: o.cpu,
      memory_mb: o.memoryMb,
      persistent: o.persistent,
      idle_timeout_seconds: o.idleTimeoutSeconds,
      from_snapshot: o.fromSnapshot,
      preview_auth: o.previewAuth,
      network: o.network,
      secrets: o.secrets,
      disk_mb: o.diskMb,
      volumes: o.volumes?.map((v) => ({ read_only: false, ...v })),
    };
    return new Sandbox(http, await http.json<SandboxInfo>('POST', '/v1/sandboxes', { json: req }));
  }

  /** Deletes a snapshot; its storage is freed once no other snapshot shares it. */
  static async deleteSnapshot(id: string, opts: ConnectionOptions = {}): Promise<void> {
    await new HttpClient(opts).request('DELETE', `/v1/snapshots/${encodeURIComponent(id)}`);
  }

  /** Attaches to an existing sandbox (fails with SANDBOX_NOT_FOUND if there is none). */
  static async connect(id: string, opts: ConnectionOptions = {}): Promise<Sandbox> {
    const http = new HttpClient(opts);
    return new Sandbox(http, await http.json<SandboxInfo>('GET', path(id)));
  }

  /** All matching sandboxes, following the pagination cursor to the end. */
  static async list(opts: SandboxListOptions = {}): Promise<SandboxInfo[]> {
    const all: SandboxInfo[] = [];
    let cursor: string | undefined;
    do {
      const page = await Sandbox.listPage({ ...opts, limit: 500, cursor });
      all.push(...page.items);
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
    return all;
  }

  /** One page of sandboxes; pass `nextCursor` back as `cursor` for the next. */
  static async listPage(opts: SandboxPageOptions = {}): Promise<SandboxPage> {
    const query: Record<string, string | number | undefined> = {
      state: opts.state,
      limit: opts.limit,
      cursor: opts.cursor,
    };
    for (const [key, value] of Object.entries(opts.metadata ?? {}))
      query[`metadata.${key}`] = value;
    const res = await new HttpClient(opts).json<SandboxList>('GET', '/v1/sandboxes', { query });
    return { items: res.items, nextCursor: res.next_cursor };
  }

  /** Destroys a sandbox by id without connecting to it first. */
  static async kill(id: string, opts: ConnectionOptions = {}): Promise<void> {
    await new HttpClient(opts).request('DELETE', path(id));
  }

  async getInfo(): Promise<SandboxInfo> {
    this.info = await this.#http.json<SandboxInfo>('GET', path(this.id));
    return this.info;
  }

  /** Changes the idle time-to-live; the sandbox is destroyed after `ttlSeconds` without activity. */
  async setTimeout(ttlSeconds: number): Promise<SandboxInfo> {
    this.info = await this.#http.json<SandboxInfo>('PATCH', path(this.id), {
      json: { ttl_seconds: ttlSeconds },
    });
    return this.info;
  }

  /** Replaces the sandbox metadata labels. */
  async setMetadata(metadata: Record<string, string>): Promise<SandboxInfo> {
    this.info = await this.#http.json<SandboxInfo>('PATCH', path(this.id), { json: { metadata } });
    return this.info;
  }

  async kill(): Promise<void> {
    await this.#http.request('DELETE', path(this.id));
  }

  /** The preview URL of a port a server in the sandbox listens on, such as `http://3000-sbx_....localhost:8080`. */
  getPreviewUrl(port: number): string {
    return this.info.preview_url.replaceAll('{port}', String(port));
  }

  /**
   * The preview token (sandboxes created with `previewAuth`): set after create
   * and after rotatePreviewToken(); the server does not show it otherwise.
   */
  get previewToken(): string | undefined {
    return this.#previewToken;
  }

  /** Replaces the preview token; the old one stops working at once. */
  async rotatePreviewToken(): Promise<string> {
    const res = await this.#http.json<PreviewToken>('POST', `${path(this.id)}/preview-token`);
    this.#previewToken = res.preview_token;
    return res.preview_token;
  }

  /** Freezes the sandbox's CPU; its memory stays. Any later call resumes it. */
  pause(): Promise<SandboxInfo> {
    return this.#lifecycle('pause');
  }

  resume(): Promise<SandboxInfo> {
    return this.#lifecycle('resume');
  }

  /** Saves memory, processes and files to disk and frees the host; any later call wakes it. */
  hibernate(): Promise<SandboxInfo> {
    return this.#lifecycle('hibernate');
  }

  wake(): Promise<SandboxInfo> {
    return this.#lifecycle('wake');
  }

  /** Usage samples (CPU, memory, disk, network) between `since` and `until`, with their totals. */
  metrics(opts: MetricsOptions = {}): Promise<SandboxMetrics> {
    return sandboxMetrics(this.#http, this.id, opts);
  }

  /** Captures memory, processes and files; the sandbox goes on running. */
  snapshot(): Promise<Snapshot> {
    return this.#http.json<Snapshot>('POST', `${path(this.id)}/snapshots`);
  }

  /** A new sandbox with a copy of this one's files, started fresh (no processes). */
  async fork(opts: ForkOptions = {}): Promise<Sandbox> {
    const info = await this.#http.json<SandboxInfo>('POST', `${path(this.id)}/fork`, {
      json: { metadata: opts.metadata, ttl_seconds: opts.ttlSeconds },
    });
    return new Sandbox(this.#http, info);
  }

  /** `count` (1..16) children that continue from one capture of this sandbox's memory. */
  async forkTree(
    count: number,
    opts: ForkOptions = {},
  ): Promise<{ parentPauseMs: number; children: Sandbox[] }> {
    const res = await this.#http.json<{ parent_pause_ms: number; children: SandboxInfo[] }>(
      'POST',
      `${path(this.id)}/fork-tree`,
      { json: { count, metadata: opts.metadata, ttl_seconds: opts.ttlSeconds } },
    );
    return {
      parentPauseMs: res.parent_pause_ms,
      children: res.children.map((c) => new Sandbox(this.#http, c)),
    };
  }

  async #lifecycle(action: 'pause' | 'resume' | 'hibernate' | 'wake'): Promise<SandboxInfo> {
    this.info = await this.#http.json<SandboxInfo>('POST', `${path(this.id)}/${action}`);
    return this.info;
  }
}

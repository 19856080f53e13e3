/**
 * A sandbox and its lifecycle: static create/connect/list, and per instance
 * `commands`, `files` and `processes`.
 */
import type {
  CreateSandboxRequest,
  Sandbox as SandboxInfo,
  SandboxList,
  SandboxState,
} from '@warren/protocol';
import { HttpClient } from './client';
import { Commands } from './commands';
import type { ConnectionOptions } from './config';
import { Files } from './files';
import { Processes } from './processes';

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
  /** Size limit of what the sandbox writes to its files, in MiB. */
  diskMb?: number;
  /** Volumes to attach; a writable one is exclusive to this sandbox. */
  volumes?: Array<{ name: string; mount_path: string; read_only?: boolean }>;
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
  readonly #http: HttpClient;

  private constructor(http: HttpClient, info: SandboxInfo) {
    this.#http = http;
    this.id = info.id;
    this.info = info;
    this.processes = new Processes(http, info.id);
    this.commands = new Commands(http, info.id, this.processes);
    this.files = new Files(http, info.id);
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
      disk_mb: o.diskMb,
      volumes: o.volumes?.map((v) => ({ read_only: false, ...v })),
    };
    return new Sandbox(http, await http.json<SandboxInfo>('POST', '/v1/sandboxes', { json: req }));
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

  async #lifecycle(action: 'pause' | 'resume' | 'hibernate' | 'wake'): Promise<SandboxInfo> {
    this.info = await this.#http.json<SandboxInfo>('POST', `${path(this.id)}/${action}`);
    return this.info;
  }
}

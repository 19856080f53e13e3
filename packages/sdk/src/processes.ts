/**
 * Background processes at the wire level: one method per /processes endpoint,
 * nothing more. `commands` builds the friendlier API on top of this.
 */
import type { ExecEvent, ExecRequest, ProcessInfo, SIGNALS } from '@warren/protocol';
import type { HttpClient } from './client';
import { parseNdjson } from './ndjson';

export type Signal = (typeof SIGNALS)[number];

export class Processes {
  readonly #http: HttpClient;
  readonly #base: string;

  constructor(http: HttpClient, sandboxId: string) {
    this.#http = http;
    this.#base = `/v1/sandboxes/${encodeURIComponent(sandboxId)}/processes`;
  }

  /** Starts `req` in the background and returns at once. */
  start(req: ExecRequest): Promise<ProcessInfo> {
    return this.#http.json('POST', this.#base, { json: req });
  }

  async list(): Promise<ProcessInfo[]> {
    const res = await this.#http.json<{ items: ProcessInfo[] }>('GET', this.#base);
    return res.items;
  }

  get(pid: number): Promise<ProcessInfo> {
    return this.#http.json('GET', `${this.#base}/${pid}`);
  }

  /** Writes to the process stdin; `eof` closes it afterwards. */
  async sendStdin(pid: number, data: string, opts: { eof?: boolean } = {}): Promise<void> {
    await this.#http.request('POST', `${this.#base}/${pid}/stdin`, {
      json: { data, eof: opts.eof },
    });
  }

  async signal(pid: number, signal: Signal = 'SIGTERM'): Promise<void> {
    await this.#http.request('POST', `${this.#base}/${pid}/signal`, { json: { signal } });
  }

  /**
   * The process output as events: buffered output first, then (with follow,
   * the default) live output until the exit event. Breaking out of the loop
   * closes the connection.
   */
  async *output(
    pid: number,
    opts: { follow?: boolean; signal?: AbortSignal } = {},
  ): AsyncGenerator<ExecEvent, void, undefined> {
    const res = await this.#http.request('GET', `${this.#base}/${pid}/output`, {
      query: { follow: opts.follow ?? true },
      signal: opts.signal,
    });
    if (res.body) yield* parseNdjson<ExecEvent>(res.body);
  }
}

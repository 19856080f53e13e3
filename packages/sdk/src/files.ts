/**
 * `sandbox.files`: the sandbox file system. Reads and writes are streamed in
 * both directions, so uploadFile/downloadFile move files of any size with
 * constant memory.
 */
import { createReadStream, createWriteStream } from 'node:fs';
import { rm, stat } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as NodeReadableStream } from 'node:stream/web';
import {
  WarrenError,
  type FileInfo,
  type FileWatchEvent,
  type WriteResult,
} from '@warren/protocol';
import type { HttpClient } from './client';
import { streamFailure } from './errors';
import { parseNdjson } from './ndjson';

export type WriteData = string | Uint8Array | Readable | ReadableStream<Uint8Array>;

export interface WriteOptions {
  /** Permission bits, as octal text ('755') or a number (0o755). */
  mode?: string | number;
  signal?: AbortSignal;
}

export interface WatchOptions {
  /** Also watch every subdirectory (made later too). */
  recursive?: boolean;
  /** Each event, in order. */
  onEvent: (event: FileWatchEvent) => void;
  /** Aborting stops the watch, like handle.stop(). */
  signal?: AbortSignal;
}

export interface WatchHandle {
  /** Ends the stream; the sandbox drops its watchers. */
  stop(): void;
  /**
   * Settles when the stream ends: after stop(), when the watched directory is
   * removed, or when the sandbox pauses or stops (watch again then). Rejects
   * if the connection broke or onEvent threw.
   */
  readonly done: Promise<void>;
}

export class Files {
  readonly #http: HttpClient;
  readonly #base: string;

  constructor(http: HttpClient, sandboxId: string) {
    this.#http = http;
    this.#base = `/v1/sandboxes/${encodeURIComponent(sandboxId)}/files`;
  }

  /** The file's content decoded as UTF-8. */
  async read(path: string): Promise<string> {
    return new TextDecoder().decode(await this.readBytes(path));
  }

  async readBytes(path: string): Promise<Uint8Array> {
    const res = await this.#http.request('GET', this.#base, { query: { path } });
    try {
      return new Uint8Array(await res.arrayBuffer());
    } catch (err) {
      throw streamFailure(err, `reading ${path}`);
    }
  }

  /** The file's content as a web ReadableStream (Readable.fromWeb() gives a Node stream). */
  async readStream(
    path: string,
    opts: { signal?: AbortSignal } = {},
  ): Promise<ReadableStream<Uint8Array>> {
    const res = await this.#http.request('GET', this.#base, {
      query: { path },
      signal: opts.signal,
    });
    return res.body ?? new ReadableStream<Uint8Array>({ start: (c) => c.close() });
  }

  /** Creates or replaces the file (and its parent directories); streams are sent chunked. */
  write(path: string, data: WriteData, opts: WriteOptions = {}): Promise<WriteResult> {
    const mode = typeof opts.mode === 'number' ? opts.mode.toString(8) : opts.mode;
    return this.#http.json('PUT', this.#base, {
      query: { path, mode },
      body: typeof data === 'string' ? new TextEncoder().encode(data) : data,
      signal: opts.signal,
    });
  }

  async list(path: string): Promise<FileInfo[]> {
    const res = await this.#http.json<{ items: FileInfo[] }>('GET', `${this.#base}/list`, {
      query: { path },
    });
    return res.items;
  }

  stat(path: string): Promise<FileInfo> {
    return this.#http.json('GET', `${this.#base}/stat`, { query: { path } });
  }

  async exists(path: string): Promise<boolean> {
    try {
      await this.stat(path);
      return true;
    } catch (err) {
      // Like fs.existsSync: a path through a non-directory does not exist either.
      if (err instanceof WarrenError && ['FILE_NOT_FOUND', 'NOT_A_DIRECTORY'].includes(err.code)) {
        return false;
      }
      throw err;
    }
  }

  /** Creates a directory, with its parents unless `parents: false`. */
  mkdir(path: string, opts: { parents?: boolean } = {}): Promise<FileInfo> {
    return this.#http.json('POST', `${this.#base}/mkdir`, {
      json: { path, parents: opts.parents ?? true },
    });
  }

  /** Removes a file or empty directory; `recursive: true` removes a whole tree. */
  async remove(path: string, opts: { recursive?: boolean } = {}): Promise<void> {
    await this.#http.request('DELETE', this.#base, {
      query: { path, recursive: opts.recursive ?? false },
    });
  }

  rename(from: string, to: string): Promise<FileInfo> {
    return this.#http.json('POST', `${this.#base}/rename`, { json: { from, to } });
  }

  /**
   * Watches a directory: resolves once the watch is in place (FILE_NOT_FOUND,
   * NOT_A_DIRECTORY otherwise), then calls onEvent for each create, write,
   * remove and rename until stopped.
   */
  async watch(path: string, opts: WatchOptions): Promise<WatchHandle> {
    const stop = new AbortController();
    const abort = () => stop.abort();
    if (opts.signal?.aborted) stop.abort();
    opts.signal?.addEventListener('abort', abort, { once: true });
    let res: Response;
    try {
      res = await this.#http.request('GET', `${this.#base}/watch`, {
        query: { path, recursive: opts.recursive ?? false },
        signal: stop.signal,
      });
    } catch (err) {
      opts.signal?.removeEventListener('abort', abort);
      throw err;
    }
    const body = res.body;
    const done = (async () => {
      try {
        if (body) for await (const e of parseNdjson<FileWatchEvent>(body)) opts.onEvent(e);
      } catch (err) {
        if (!stop.signal.aborted) throw streamFailure(err, `watching ${path}`);
      } finally {
        opts.signal?.removeEventListener('abort', abort);
      }
    })();
    done.catch(() => undefined); // the caller awaits it or not
    return { stop: abort, done };
  }

  /** Streams a local file into the sandbox, keeping its permission bits unless `mode` is given. */
  async uploadFile(
    localPath: string,
    remotePath: string,
    opts: WriteOptions = {},
  ): Promise<WriteResult> {
    // Checked first so a bad local path is reported as such, not as a network failure.
    const info = await stat(localPath);
    if (!info.isFile())
      throw new WarrenError('IS_A_DIRECTORY', `${localPath} is not a regular file`);
    const mode = opts.mode ?? info.mode & 0o777;
    return this.write(remotePath, createReadStream(localPath), { ...opts, mode });
  }

  /** Streams a sandbox file to a local path; a partial file is removed if the transfer fails. */
  async downloadFile(
    remotePath: string,
    localPath: string,
    opts: { signal?: AbortSignal } = {},
  ): Promise<{ path: string; size: number }> {
    const body = await this.readStream(remotePath, opts);
    const out = createWriteStream(localPath);
    try {
      // The cast bridges the global and node:stream/web typings of the same class.
      await pipeline(Readable.fromWeb(body as NodeReadableStream<Uint8Array>), out);
    } catch (err) {
      await rm(localPath, { force: true });
      throw streamFailure(err, `downloading ${remotePath}`);
    }
    return { path: localPath, size: out.bytesWritten };
  }
}

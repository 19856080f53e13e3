/**
 * Watching a directory for the files API. Node's fs.watch is inotify on Linux
 * (gVisor implements inotify), one watcher per directory: recursive watching
 * adds a watcher for every subdirectory, also the ones made later, rather than
 * relying on fs.watch's own `recursive` (a JS emulation on Linux in Node 20).
 *
 * fs.watch only says `rename` (something appeared or went) or `change`, so
 * each event is classified by looking: a name that now exists and was not
 * known is a create; a known one that is gone is a remove, unless the next
 * event is an appearance of the same inode (inotify reports the two halves of
 * a move one after the other), which makes it a rename. Events of a short
 * batch (BATCH_MS) are classified together; repeated writes to one file in a
 * batch count once, and a file made and removed within a batch is not seen.
 */
import { watch, type FSWatcher, type Stats } from 'node:fs';
import type { ServerHttp2Stream } from 'node:http2';
import { lstat, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { WarrenError } from '@warren/protocol/errors';
import type { FileWatchEvent } from '@warren/protocol/guest';

const BATCH_MS = 25;
/** Directories one recursive watch may cover. */
export const MAX_WATCHED_DIRS = 4096;

interface Known {
  ino: number;
  dir: boolean;
}

/** Open watches of this agent: what the health answer counts. */
let openWatches = 0;
export function watchCount(): number {
  return openWatches;
}

export class DirWatch {
  private readonly watchers = new Map<string, FSWatcher>();
  private readonly known = new Map<string, Known>();
  private queue: Array<{ dir: string; name: string; kind: string }> = [];
  private timer: NodeJS.Timeout | null = null;
  private flushing = false;
  private closed = false;

  constructor(
    private readonly root: string,
    private readonly recursive: boolean,
    private readonly emit: (e: FileWatchEvent) => void,
    private readonly onEnd: () => void,
  ) {}

  /** FILE_NOT_FOUND or NOT_A_DIRECTORY before anything is watched. */
  async start(): Promise<void> {
    const st = await lstat(this.root).catch(() => null);
    if (!st) throw new WarrenError('FILE_NOT_FOUND', `${this.root} does not exist`);
    if (!st.isDirectory())
      throw new WarrenError('NOT_A_DIRECTORY', `${this.root} is not a directory`);
    openWatches += 1;
    try {
      await this.addDir(this.root, false);
    } catch (err) {
      this.close();
      throw err;
    }
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    openWatches -= 1;
    if (this.timer) clearTimeout(this.timer);
    for (const w of this.watchers.values()) w.close();
    this.watchers.clear();
    this.known.clear();
  }

  /** Watches a directory and learns what it holds; `announce` reports its entries as created. */
  private async addDir(dir: string, announce: boolean): Promise<void> {
    if (this.closed || this.watchers.has(dir)) return;
    if (this.watchers.size >= MAX_WATCHED_DIRS) {
      if (!announce)
        throw new WarrenError(
          'INVALID_REQUEST',
          `more than ${MAX_WATCHED_DIRS} directories under ${this.root}: watch a smaller tree`,
        );
      return; // later growth past the limit goes unwatched
    }
    const w = watch(dir, { persistent: false }, (kind, name) => {
      if (name) this.push(dir, String(name), kind);
    });
    w.on('error', () => this.dropDir(dir));
    this.watchers.set(dir, w);
    const entries = await readdir(dir).catch(() => [] as string[]);
    for (const name of entries) {
      const path = join(dir, name);
      const st = await lstat(path).catch(() => null);
      if (!st || this.closed) continue;
      this.known.set(path, { ino: st.ino, dir: st.isDirectory() });
      if (announce) this.send('create', path, st.isDirectory());
      if (st.isDirectory() && this.recursive) await this.addDir(path, announce);
    }
  }

  /** Forgets a directory that went away (or moved) and everything under it. */
  private dropDir(dir: string): void {
    for (const [d, w] of this.watchers)
      if (d === dir || d.startsWith(`${dir}/`)) {
        w.close();
        this.watchers.delete(d);
      }
    for (const p of this.known.keys()) if (p.startsWith(`${dir}/`)) this.known.delete(p);
  }

  private push(dir: string, name: string, kind: string): void {
    if (this.closed) return;
    this.queue.push({ dir, name, kind });
    this.timer ??= setTimeout(() => void this.flush(), BATCH_MS);
  }

  private send(type: FileWatchEvent['type'], path: string, isDir: boolean, old?: string): void {
    if (this.closed) return;
    this.emit({
      type,
      path,
      ...(old !== undefined && { old_path: old }),
      is_dir: isDir,
      at: new Date().toISOString(),
    });
  }

  private async flush(): Promise<void> {
    this.timer = null;
    if (this.flushing || this.closed) return;
    this.flushing = true;
    try {
      const batch = this.queue;
      this.queue = [];
      let lastWrite = '';
      for (let i = 0; i < batch.length && !this.closed; i++) {
        const { dir, name, kind } = batch[i]!;
        if (!this.watchers.has(dir)) continue; // its directory went away
        const path = join(dir, name);
        const st = await lstat(path).catch(() => null);
        const prev = this.known.get(path);
        if (kind === 'change') {
          if (st && prev && !st.isDirectory() && lastWrite !== path)
            this.send('write', path, false);
          if (st && !prev) await this.appeared(path, st);
          if (st) lastWrite = path;
          continue;
        }
        lastWrite = '';
        if (st && prev?.ino === st.ino) continue; // nothing new (already seen)
        if (!st && !prev) continue; // made and gone within the batch
        if (!st && prev) {
          const next = batch[i + 1];
          const to = next && next.kind === 'rename' ? join(next.dir, next.name) : null;
          const moved = to ? await lstat(to).catch(() => null) : null;
          if (to && next && moved?.ino === prev.ino && this.watchers.has(next.dir)) {
            i += 1;
            await this.renamed(path, to, moved, prev);
          } else {
            this.gone(path, prev);
          }
          continue;
        }
        if (st) await this.appeared(path, st);
      }
      const root = await lstat(this.root).catch(() => null);
      if (!root?.isDirectory() && !this.closed) {
        this.send('remove', this.root, true);
        this.close();
        this.onEnd();
      }
    } finally {
      this.flushing = false;
    }
    if (this.queue.length && !this.closed) this.timer ??= setTimeout(() => void this.flush(), 0);
  }

  private async appeared(path: string, st: Stats): Promise<void> {
    const dir = st.isDirectory();
    this.known.set(path, { ino: st.ino, dir });
    this.send('create', path, dir);
    // What was made in it before its watcher existed is reported as created too.
    if (dir && this.recursive) await this.addDir(path, true);
  }

  private gone(path: string, prev: Known): void {
    this.known.delete(path);
    if (prev.dir) this.dropDir(path);
    this.send('remove', path, prev.dir);
  }

  private async renamed(from: string, to: string, st: Stats, prev: Known): Promise<void> {
    this.known.delete(from);
    this.known.set(to, { ino: st.ino, dir: prev.dir });
    this.send('rename', to, prev.dir, from);
    if (prev.dir) {
      this.dropDir(from);
      if (this.recursive) await this.addDir(to, false);
    }
  }
}

/** GET /files/watch: answers once the watchers are in place, then one event a line until closed. */
export async function serveWatch(
  stream: ServerHttp2Stream,
  path: string,
  recursive: boolean,
): Promise<void> {
  const w = new DirWatch(
    path,
    recursive,
    (e) => {
      if (!stream.destroyed && stream.headersSent) stream.write(`${JSON.stringify(e)}\n`);
    },
    () => stream.end(),
  );
  await w.start();
  if (stream.destroyed || stream.closed) return w.close();
  stream.on('close', () => w.close());
  stream.respond({ ':status': 200, 'content-type': 'application/x-ndjson' });
}

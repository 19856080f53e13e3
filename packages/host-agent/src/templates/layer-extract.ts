/**
 * Applies one image layer (a tar, plain or gzip-compressed) to a root
 * filesystem directory on the host, the way container runtimes do:
 * entries are written in order, `.wh.<name>` whiteouts delete what lower
 * layers put there and `.wh..wh..opq` makes a directory opaque.
 *
 * Nothing is ever written outside `root`:
 * - an entry name with a `..` component is refused (INVALID_IMAGE); a leading
 *   `/` is dropped, so absolute names land inside the root;
 * - symlinks are created as they are, absolute ones too (inside the sandbox
 *   they resolve within its own root), but are never followed on the host: a
 *   symlink met on the way to an entry is resolved *inside* the root (like
 *   `chroot` would), and the last component is opened with O_NOFOLLOW;
 * - hard link targets are resolved the same way, so they stay in the root;
 * - device nodes and FIFOs are skipped (the sandbox gets its own /dev).
 *
 * tar-stream only parses; every write is ours, which is why it is used here
 * rather than an extractor that decides on its own how to treat links.
 */
import { createHash, type Hash } from 'node:crypto';
import {
  chmodSync,
  closeSync,
  constants,
  createReadStream,
  lchownSync,
  linkSync,
  lstatSync,
  lutimesSync,
  mkdirSync,
  openSync,
  readdirSync,
  readlinkSync,
  rmSync,
  symlinkSync,
  writeSync,
  type Stats,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { Transform, type Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import { extract, type Header } from 'tar-stream';
import { WarrenError } from '@warren/protocol';

const WHITEOUT = '.wh.';
const OPAQUE = '.wh..wh..opq';
const MAX_SYMLINK_HOPS = 40;

export interface LayerStats {
  entries: number;
  bytes: number;
  skipped: number;
  /** sha256 of the layer as read (compressed, if it was), `sha256:<hex>`. */
  digest: string;
  size: number;
}

export interface ApplyOptions {
  /** Refuse the layer when the regular files in it add up to more than this. */
  maxBytes?: number;
}

function bad(message: string): WarrenError {
  return new WarrenError('INVALID_IMAGE', message);
}

/** Splits an archive name into plain components; refuses `..`. */
export function entryParts(name: string): string[] {
  if (name.includes('\0')) throw bad(`layer entry name contains a NUL byte`);
  const parts = name.split('/').filter((p) => p !== '' && p !== '.');
  if (parts.includes('..'))
    throw bad(`layer entry ${JSON.stringify(name)} points outside the root (..)`);
  return parts;
}

/**
 * Resolves `parts` to a host path inside `root`, following symlinks met on
 * the way as if `root` were `/` (so they cannot lead out). The last
 * component is not followed. Missing directories are created when `create`.
 */
export function resolveInRoot(
  root: string,
  parts: string[],
  create: boolean,
  known?: Set<string>,
): string {
  const pending = [...parts];
  const last = pending.pop();
  const cur: string[] = [];
  let hops = 0;
  while (pending.length > 0) {
    const comp = pending.shift() as string;
    if (comp === '' || comp === '.') continue;
    if (comp === '..') {
      cur.pop(); // never above the root
      continue;
    }
    const p = join(root, ...cur, comp);
    if (known?.has(p)) {
      cur.push(comp);
      continue;
    }
    const st = lstatOrNull(p);
    if (!st) {
      if (!create) throw bad(`${join(...cur, comp)} does not exist in the image`);
      mkdirSync(p, { mode: 0o755 });
      known?.add(p);
      cur.push(comp);
    } else if (st.isDirectory()) {
      known?.add(p);
      cur.push(comp);
    } else if (st.isSymbolicLink()) {
      if (++hops > MAX_SYMLINK_HOPS) throw bad(`too many symlinks resolving ${parts.join('/')}`);
      const target = readlinkSync(p);
      if (target.startsWith('/')) cur.length = 0;
      pending.unshift(...target.split('/'));
    } else {
      throw bad(`${join(...cur, comp)} is not a directory in the image`);
    }
  }
  return last === undefined ? root : join(root, ...cur, last);
}

function lstatOrNull(path: string): Stats | null {
  try {
    return lstatSync(path);
  } catch {
    return null;
  }
}

function setMeta(path: string, h: Header, isLink: boolean): void {
  lchownSync(path, h.uid ?? 0, h.gid ?? 0);
  // chown clears set-id bits, so the mode comes after it; symlinks have no mode of their own.
  if (!isLink) chmodSync(path, (h.mode ?? 0o644) & 0o7777);
  const mtime = h.mtime ?? new Date(0);
  try {
    lutimesSync(path, mtime, mtime);
  } catch {
    // times are cosmetic
  }
}

/** Counts bytes and hashes what passes through (the layer as stored). */
class Digesting extends Transform {
  readonly hash: Hash = createHash('sha256');
  size = 0;
  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: () => void): void {
    this.hash.update(chunk);
    this.size += chunk.length;
    this.push(chunk);
    cb();
  }
}

/** Passes the stream through gunzip when it starts with the gzip magic bytes. */
function maybeGunzip(): Transform {
  let gunzip: Transform | null = null;
  let plain = false;
  return new Transform({
    transform(chunk: Buffer, _enc, cb) {
      if (plain) return cb(null, chunk);
      if (!gunzip) {
        if (chunk.length >= 4 && chunk.readUInt32LE(0) === 0xfd2fb528)
          return cb(bad('zstd-compressed layers are not supported; use gzip or plain tar'));
        if (!(chunk.length >= 2 && chunk[0] === 0x1f && chunk[1] === 0x8b)) {
          plain = true;
          return cb(null, chunk);
        }
        gunzip = createGunzip();
        gunzip.on('data', (d: Buffer) => this.push(d));
        gunzip.on('error', (e) => this.destroy(bad(`layer is not valid gzip: ${e.message}`)));
      }
      if (gunzip.write(chunk)) cb();
      else gunzip.once('drain', cb);
    },
    flush(cb) {
      if (!gunzip) return cb();
      gunzip.once('end', () => cb());
      gunzip.end();
    },
  });
}

/** Applies a layer read from `input` to `root`. */
export async function applyLayer(
  root: string,
  input: Readable,
  opts: ApplyOptions = {},
): Promise<LayerStats> {
  const maxBytes = opts.maxBytes ?? 64 * 1024 ** 3;
  const digest = new Digesting();
  const ex = extract();
  const writer = new LayerWriter(root, maxBytes);
  const gunzip = maybeGunzip();
  // tar-stream's extractor is a streamx stream: fed with pipe(), errors forwarded by hand.
  const fail = (err: Error) => ex.destroy(err);
  for (const stage of [input, digest, gunzip]) stage.on('error', fail);
  ex.on('error', () => undefined); // surfaces through the iterator below
  input
    .pipe(digest)
    .pipe(gunzip)
    .pipe(ex as unknown as NodeJS.WritableStream);
  try {
    for await (const entry of ex) {
      const h = entry.header;
      try {
        await writer.apply(h, entry as unknown as AsyncIterable<Buffer>);
      } finally {
        entry.resume();
      }
    }
  } catch (err) {
    input.destroy();
    if (err instanceof WarrenError) throw err;
    throw bad(`cannot read layer: ${err instanceof Error ? err.message : String(err)}`);
  }
  return { ...writer.stats, digest: `sha256:${digest.hash.digest('hex')}`, size: digest.size };
}

/**
 * What a layer's entries do to the root. File system calls are synchronous on
 * purpose: each is a few microseconds, while an awaited call waits for the
 * thread pool, which made unpacking an ordinary image several times slower.
 * The event loop still gets a turn between entries.
 */
class LayerWriter {
  /** Paths this layer wrote: an opaque marker keeps them and removes the rest. */
  private readonly written = new Set<string>();
  /** Host paths known to be plain directories (forgotten whenever anything is removed). */
  private readonly dirs = new Set<string>();
  readonly stats = { entries: 0, bytes: 0, skipped: 0 };

  constructor(
    private readonly root: string,
    private readonly maxBytes: number,
  ) {}

  private remove(path: string): void {
    rmSync(path, { recursive: true, force: true });
    this.dirs.clear();
  }

  /** Clears the way for a new entry; true when a directory is there and may stay. */
  private clear(path: string, keepDir: boolean): boolean {
    const st = lstatOrNull(path);
    if (!st) return false;
    if (keepDir && st.isDirectory()) return true;
    this.remove(path);
    return false;
  }

  async apply(h: Header, entry: AsyncIterable<Buffer>): Promise<void> {
    const root = this.root;
    const parts = entryParts(h.name);
    this.stats.entries++;
    const base = parts[parts.length - 1];
    if (base === undefined) return; // the root itself
    const parentParts = parts.slice(0, -1);

    if (base === OPAQUE) {
      const dir = dirname(resolveInRoot(root, [...parentParts, OPAQUE], true, this.dirs));
      const prefix = parentParts.join('/');
      for (const name of readdirSync(dir)) {
        const child = prefix ? `${prefix}/${name}` : name;
        if (!this.written.has(child)) this.remove(join(dir, name));
      }
      return;
    }
    if (base.startsWith(WHITEOUT)) {
      const name = base.slice(WHITEOUT.length);
      if (!name || name === '.' || name === '..') throw bad(`invalid whiteout ${h.name}`);
      this.remove(resolveInRoot(root, [...parentParts, name], true, this.dirs));
      return;
    }

    const target = resolveInRoot(root, parts, true, this.dirs);
    this.written.add(parts.join('/'));
    switch (h.type) {
      case 'directory': {
        if (!this.clear(target, true)) mkdirSync(target, { mode: 0o755 });
        setMeta(target, h, false);
        return;
      }
      case 'file':
      case 'contiguous-file': {
        this.stats.bytes += h.size ?? 0;
        if (this.stats.bytes > this.maxBytes)
          throw bad(`image is larger than the limit of ${this.maxBytes} bytes of files`);
        this.clear(target, false);
        const fd = openSync(
          target,
          constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
          0o600,
        );
        try {
          // tar-stream entries are streamx streams: read them by iteration.
          for await (const chunk of entry) writeSync(fd, chunk);
        } finally {
          closeSync(fd);
        }
        setMeta(target, h, false);
        return;
      }
      case 'symlink': {
        this.clear(target, false);
        symlinkSync(h.linkname ?? '', target);
        setMeta(target, h, true);
        return;
      }
      case 'link': {
        const source = resolveInRoot(root, entryParts(h.linkname ?? ''), false, this.dirs);
        const st = lstatOrNull(source);
        if (!st || st.isDirectory())
          throw bad(`hard link ${h.name} points to a missing entry or a directory`);
        this.clear(target, false);
        linkSync(source, target);
        return;
      }
      default:
        // character and block devices, FIFOs: the sandbox has its own /dev.
        this.stats.skipped++;
    }
  }
}

/** Applies a layer stored in a file. */
export function applyLayerFile(
  root: string,
  file: string,
  opts: ApplyOptions = {},
): Promise<LayerStats> {
  return applyLayer(root, createReadStream(file), opts);
}

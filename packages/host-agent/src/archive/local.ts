/** The archive in a local directory: one file per object, written with fsync and rename. */
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, open, readdir, rename, rm, stat } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { randomText, type ArchivedObject } from '@warren/protocol';
import { checkKey, notFound, type ObjectStore } from './store';

async function fsyncPath(path: string): Promise<void> {
  const fh = await open(path, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

export class LocalObjectStore implements ObjectStore {
  readonly kind = 'local' as const;
  constructor(readonly root: string) {}

  private path(key: string): string {
    checkKey(key);
    return join(this.root, key);
  }

  async put(key: string, body: Readable | Buffer, _size: number): Promise<void> {
    const path = this.path(key);
    await mkdir(dirname(path), { recursive: true, mode: 0o700 });
    const tmp = `${path}.partial-${randomText(8)}`;
    try {
      await pipeline(Buffer.isBuffer(body) ? Readable.from([body]) : body, createWriteStream(tmp));
      await fsyncPath(tmp);
      await rename(tmp, path);
      await fsyncPath(dirname(path));
    } catch (err) {
      await rm(tmp, { force: true });
      throw err;
    }
  }

  async get(key: string): Promise<Readable> {
    const path = this.path(key);
    if (!(await stat(path).catch(() => null))?.isFile()) throw notFound(key);
    return createReadStream(path);
  }

  async list(prefix: string): Promise<ArchivedObject[]> {
    checkKey(prefix, true);
    const base = prefix.endsWith('/') ? prefix : dirname(prefix);
    const out: ArchivedObject[] = [];
    const walk = async (dir: string): Promise<void> => {
      const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
      for (const e of entries) {
        const p = join(dir, e.name);
        if (e.isDirectory()) await walk(p);
        else if (e.isFile() && !e.name.includes('.partial-')) {
          const key = relative(this.root, p);
          if (key.startsWith(prefix)) out.push({ key, size: (await stat(p)).size });
        }
      }
    };
    await walk(join(this.root, base === '.' ? '' : base));
    return out.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  }

  async remove(prefix: string): Promise<void> {
    for (const o of await this.list(prefix)) await rm(join(this.root, o.key), { force: true });
    if (prefix.endsWith('/')) await rm(join(this.root, prefix), { recursive: true, force: true });
  }
}

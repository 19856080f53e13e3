/** DirWatch on the host's own inotify: how moves and directory renames are classified. */
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, test } from 'node:test';
import type { FileWatchEvent } from '@warren/protocol';
import { DirWatch, watchCount } from '../../src/watch';

let dir: string;
let seen: FileWatchEvent[];
let w: DirWatch;
let ended = false;

const settle = () => new Promise((r) => setTimeout(r, 150));
const short = () =>
  seen.map((e) =>
    [e.type, e.old_path?.slice(dir.length), e.path.slice(dir.length) + (e.is_dir ? '/' : '')]
      .filter(Boolean)
      .join(' '),
  );

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'watch-'));
  seen = [];
  ended = false;
  await mkdir(join(dir, 'sub'));
  await writeFile(join(dir, 'sub/f.txt'), 'x');
  await writeFile(join(dir, 'old.txt'), 'o');
  w = new DirWatch(
    dir,
    true,
    (e) => seen.push(e),
    () => (ended = true),
  );
  await w.start();
});

afterEach(async () => {
  w.close();
  await rm(dir, { recursive: true, force: true });
});

test('a move over an existing file is one rename; the existing contents are not announced', async () => {
  await writeFile(join(dir, 'new.txt'), 'n');
  await settle();
  await rename(join(dir, 'new.txt'), join(dir, 'old.txt'));
  await settle();
  assert.deepEqual(short(), ['create /new.txt', 'write /new.txt', 'rename /new.txt /old.txt']);
});

test('a renamed directory is watched under its new name', async () => {
  await rename(join(dir, 'sub'), join(dir, 'moved'));
  await settle();
  await writeFile(join(dir, 'moved/f.txt'), 'again');
  await settle();
  assert.deepEqual(short(), ['rename /sub /moved/', 'write /moved/f.txt']);
});

test('removing the watched directory ends the watch, and close releases it', async () => {
  assert.equal(watchCount(), 1);
  await rm(dir, { recursive: true });
  await settle();
  assert.equal(ended, true);
  assert.deepEqual(short().at(-1), 'remove /');
  assert.equal(watchCount(), 0);
});

test('a path that is missing or a file is refused before anything is watched', async () => {
  const before = watchCount();
  const none = new DirWatch(
    join(dir, 'nope'),
    false,
    () => undefined,
    () => undefined,
  );
  await assert.rejects(none.start(), { code: 'FILE_NOT_FOUND' });
  const file = new DirWatch(
    join(dir, 'old.txt'),
    false,
    () => undefined,
    () => undefined,
  );
  await assert.rejects(file.start(), { code: 'NOT_A_DIRECTORY' });
  assert.equal(watchCount(), before);
});

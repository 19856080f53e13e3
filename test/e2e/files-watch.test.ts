/** File watching (GET /v1/sandboxes/:id/files/watch and sandbox.files.watch) against real gVisor inotify. */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Sandbox, type FileWatchEvent } from '@warren/sdk';
import { createSandbox, exec, startTestPlatform, type TestPlatform } from '../fixture';

const W = '/root/watched';
const short = (e: FileWatchEvent) =>
  `${e.type} ${e.old_path ? `${e.old_path.slice(W.length)} -> ` : ''}${e.path.slice(W.length)}${e.is_dir ? '/' : ''}`;

/** Waits until `seen` holds `count` events or more (the watch reports within a few tens of ms). */
async function waitFor(seen: FileWatchEvent[], count: number, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (seen.length < count) {
    if (Date.now() > deadline)
      assert.fail(`timed out waiting for ${what}; saw: ${seen.map(short).join(', ')}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function waitUntil(check: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!(await check())) {
    if (Date.now() > deadline) assert.fail(`timed out waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('file watch (real gVisor)', () => {
  let p: TestPlatform;
  let id: string;
  let sandbox: Sandbox;
  const sh = async (script: string) => {
    const r = await exec(p, id, { cmd: 'sh', args: ['-c', script] });
    assert.equal(r.exit_code, 0, r.stderr);
    return r.stdout;
  };

  before(async () => {
    p = await startTestPlatform();
    id = await createSandbox(p);
    sandbox = await Sandbox.connect(id, { apiUrl: p.url, apiKey: p.adminToken });
  });
  after(async () => {
    await p?.stop();
  });

  it('streams create, write, rename and remove in order, into subdirectories made later', async () => {
    await sh(`mkdir -p ${W}`);
    const seen: FileWatchEvent[] = [];
    const handle = await sandbox.files.watch(W, {
      recursive: true,
      onEvent: (e) => seen.push(e),
    });
    assert.equal((await p.host.guestHealth(id)).watches, 1);
    try {
      // Each step waits for its events, so the order across steps is the order of the changes.
      const step = async (script: string, expected: string[], optional: string[] = []) => {
        const from = seen.length;
        await sh(script);
        await waitFor(seen, from + expected.length, expected.join(', '));
        await new Promise((r) => setTimeout(r, 150)); // anything else this step caused
        const got = seen
          .slice(from)
          .map(short)
          .filter((s) => !optional.includes(s));
        assert.deepEqual(got, expected);
      };
      await step(`echo one > ${W}/a.txt`, ['create /a.txt', 'write /a.txt']);
      await step(`echo two >> ${W}/a.txt`, ['write /a.txt']);
      await step(`mv ${W}/a.txt ${W}/b.txt`, ['rename /a.txt -> /b.txt']);
      // A file made in a new directory before its watcher exists is still reported.
      await step(
        `mkdir ${W}/sub && echo x > ${W}/sub/c.txt`,
        ['create /sub/', 'create /sub/c.txt'],
        ['write /sub/c.txt'],
      );
      await step(`echo y >> ${W}/sub/c.txt`, ['write /sub/c.txt']);
      await step(`mv ${W}/sub/c.txt ${W}/d.txt`, ['rename /sub/c.txt -> /d.txt']);
      await step(`rm ${W}/b.txt`, ['remove /b.txt']);
      await step(`rmdir ${W}/sub`, ['remove /sub/']);
      for (const e of seen) assert.ok(!Number.isNaN(Date.parse(e.at)), e.at);
      assert.equal(seen.find((e) => e.type === 'rename')?.old_path, `${W}/a.txt`);
    } finally {
      handle.stop();
    }
    await handle.done;
    // Stopped: the guest dropped its watchers, and later changes are not delivered.
    await waitUntil(async () => (await p.host.guestHealth(id)).watches === 0, 'watchers closed');
    const count = seen.length;
    await sh(`echo late > ${W}/late.txt`);
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(seen.length, count);
  });

  it('without recursive only the directory itself is watched; removing it ends the stream', async () => {
    await sh(`mkdir -p ${W}2/inner`);
    const seen: FileWatchEvent[] = [];
    const handle = await sandbox.files.watch(`${W}2`, { onEvent: (e) => seen.push(e) });
    try {
      await sh(`echo a > ${W}2/inner/deep.txt; echo b > ${W}2/top.txt`);
      await waitFor(seen, 2, 'top.txt');
      assert.deepEqual(
        seen.map((e) => `${e.type} ${e.path}`),
        [`create ${W}2/top.txt`, `write ${W}2/top.txt`],
      );
      await sh(`rm -r ${W}2`);
      await handle.done; // the watched directory went: the stream ends by itself
      await waitUntil(async () => (await p.host.guestHealth(id)).watches === 0, 'watch ended');
      const last = seen.at(-1)!;
      assert.deepEqual([last.type, last.path, last.is_dir], ['remove', `${W}2`, true]);
    } finally {
      handle.stop();
    }
  });

  it('a missing path is 404 FILE_NOT_FOUND, a file 400 NOT_A_DIRECTORY, a relative path 400', async () => {
    const watch = (path: string) =>
      p.api(`/v1/sandboxes/${id}/files/watch?path=${encodeURIComponent(path)}`);
    const codeOf = async (res: Response) => [
      res.status,
      ((await res.json()) as { error: { code: string } }).error.code,
    ];
    assert.deepEqual(await codeOf(await watch('/no/such/dir')), [404, 'FILE_NOT_FOUND']);
    assert.deepEqual(await codeOf(await watch('/etc/passwd')), [400, 'NOT_A_DIRECTORY']);
    assert.deepEqual(await codeOf(await watch('relative')), [400, 'INVALID_PATH']);
    await assert.rejects(
      sandbox.files.watch('/no/such/dir', { onEvent: () => undefined }),
      (err: { code?: string }) => err.code === 'FILE_NOT_FOUND',
    );
  });
});

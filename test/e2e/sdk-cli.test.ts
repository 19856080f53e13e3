/**
 * The TypeScript SDK and the CLI against a real platform (gVisor, real runsc):
 * what users of `@warren/sdk` and `warren` see, end to end.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Audit, Sandbox, WarrenError, listTemplates, type ConnectionOptions } from '@warren/sdk';
import { runCli, startTestPlatform, type TestPlatform } from '../fixture';
import { waitFor } from '../wait';

const sha256 = (data: Buffer) => createHash('sha256').update(data).digest('hex');

function isCode(code: string) {
  return (err: unknown) => {
    assert.ok(err instanceof WarrenError, `expected a WarrenError, got ${String(err)}`);
    assert.equal(err.code, code, err.message);
    return true;
  };
}

describe('TypeScript SDK and CLI (real gVisor)', () => {
  let p: TestPlatform;
  let conn: ConnectionOptions;
  let tmp: string;

  const cli = (args: string[]) => runCli(p, args, tmp);

  before(async () => {
    p = await startTestPlatform();
    conn = { apiUrl: p.url, apiKey: p.adminToken };
    tmp = mkdtempSync('/tmp/wsdk-');
  });
  after(async () => {
    try {
      await p?.stop();
    } finally {
      if (tmp) rmSync(tmp, { recursive: true, force: true });
    }
  });

  describe('SDK', () => {
    let sbx: Sandbox;
    before(async () => {
      sbx = await Sandbox.create({ ...conn, template: 'base', metadata: { suite: 'sdk' } });
    });
    after(async () => {
      // Whatever the tests did: the sandbox is gone (a second kill is harmless).
      if (sbx) await Sandbox.kill(sbx.id, conn).catch(() => undefined);
    });

    it('Sandbox.create connects with apiUrl/apiKey and returns a running sandbox', async () => {
      assert.match(sbx.id, /^sbx_[0-9a-z]{16}$/);
      assert.equal(sbx.info.state, 'running');
      assert.equal(sbx.info.template, 'base');
      assert.deepEqual(sbx.info.metadata, { suite: 'sdk' });
      const listed = await Sandbox.list({ ...conn, metadata: { suite: 'sdk' } });
      assert.deepEqual(
        listed.map((s) => s.id),
        [sbx.id],
      );
      const again = await Sandbox.connect(sbx.id, conn);
      assert.equal(again.id, sbx.id);
    });

    it('commands.run returns exit code, stdout and stderr of a shell line', async () => {
      const r = await sbx.commands.run('echo hi; echo err >&2; exit 4');
      assert.equal(r.exitCode, 4);
      assert.equal(r.stdout, 'hi\n');
      assert.equal(r.stderr, 'err\n');
      assert.equal(r.signal, null);
      assert.equal(r.timedOut, false);
      assert.ok(Number.isInteger(r.pid) && r.pid > 0, `pid ${r.pid}`);
      assert.ok(r.durationMs >= 0);
      // args given: no shell involved.
      const direct = await sbx.commands.run('printf', { args: ['%s|', 'a b', '$HOME'] });
      assert.equal(direct.stdout, 'a b|$HOME|');
    });

    it('commands.run streams chunks to onStdout/onStderr in order, while it runs', async () => {
      const started = Date.now();
      const seen: Array<{ stream: 'out' | 'err'; data: string; at: number }> = [];
      const r = await sbx.commands.run(
        'for i in 1 2 3; do echo out$i; echo err$i >&2; sleep 0.3; done',
        {
          onStdout: (data) => void seen.push({ stream: 'out', data, at: Date.now() - started }),
          onStderr: (data) => void seen.push({ stream: 'err', data, at: Date.now() - started }),
        },
      );
      const finished = Date.now() - started;
      assert.equal(r.exitCode, 0);
      assert.equal(r.stdout, 'out1\nout2\nout3\n');
      assert.equal(r.stderr, 'err1\nerr2\nerr3\n');
      const out = seen.filter((s) => s.stream === 'out').map((s) => s.data);
      const err = seen.filter((s) => s.stream === 'err').map((s) => s.data);
      assert.equal(out.join(''), r.stdout);
      assert.equal(err.join(''), r.stderr);
      // Lines of round i all arrive before any line of round i+1 (the sleeps separate them).
      const round = (data: string) => Number(/(\d)\n$/.exec(data)?.[1]);
      const rounds = seen.map((s) => round(s.data));
      assert.deepEqual(
        rounds,
        [...rounds].sort((a, b) => a - b),
        JSON.stringify(seen),
      );
      assert.ok(seen.length >= 6, `one chunk per line: ${JSON.stringify(seen)}`);
      // Streamed, not delivered at the end: the first chunk came long before the exit.
      assert.ok(seen[0]!.at < finished - 400, `first chunk at ${seen[0]!.at} of ${finished} ms`);
    });

    it('background commands: stdin, wait, reattach with connect, kill', async () => {
      const cat = await sbx.commands.run('cat', { background: true });
      assert.ok(cat.pid > 0);
      await cat.sendStdin('hello\n');
      await cat.sendStdin('world\n');
      await cat.closeStdin();
      const done = await cat.wait();
      assert.deepEqual([done.exitCode, done.stdout, done.stderr], [0, 'hello\nworld\n', '']);
      assert.equal(done.pid, cat.pid);
      // Reattaching after the exit replays the whole output.
      const replayed: string[] = [];
      const late = await sbx.commands.connect(cat.pid, { onStdout: (d) => void replayed.push(d) });
      const again = await late.wait();
      assert.equal(again.stdout, 'hello\nworld\n');
      assert.equal(replayed.join(''), 'hello\nworld\n');
      assert.equal(again.exitCode, 0);

      // A running one: reattach sees earlier and live output; kill ends it with SIGTERM.
      const ticker = await sbx.commands.run('echo start; sleep 0.5; echo tick; sleep 60', {
        background: true,
      });
      const chunks: string[] = [];
      const attached = await sbx.commands.connect(ticker.pid, {
        onStdout: (d) => void chunks.push(d),
      });
      await waitFor(() => chunks.join('').includes('tick'), {
        what: 'the attached handle to see the live "tick"',
      });
      assert.equal(chunks.join(''), 'start\ntick\n');
      assert.equal((await attached.info()).state, 'running');
      await attached.kill();
      const killed = await ticker.wait();
      assert.equal(killed.signal, 'SIGTERM');
      assert.equal(killed.exitCode, 143);
      assert.equal(killed.stdout, 'start\ntick\n');
      const listed = await sbx.commands.list();
      assert.ok(listed.some((pr) => pr.pid === ticker.pid && pr.state === 'exited'));

      await assert.rejects(sbx.commands.connect(999_999), isCode('PROCESS_NOT_FOUND'));
    });

    it('files: write, read, list, stat, exists, mkdir, rename, remove', async () => {
      const w = await sbx.files.write('/tmp/sdk/a.txt', 'hello files');
      assert.deepEqual(w, { path: '/tmp/sdk/a.txt', size: 11 });
      assert.equal(await sbx.files.read('/tmp/sdk/a.txt'), 'hello files');
      await sbx.files.write('/tmp/sdk/run.sh', '#!/bin/sh\necho ran\n', { mode: 0o755 });

      const st = await sbx.files.stat('/tmp/sdk/a.txt');
      assert.deepEqual([st.name, st.type, st.size], ['a.txt', 'file', 11]);
      assert.equal((await sbx.files.stat('/tmp/sdk/run.sh')).mode, '755');
      assert.equal((await sbx.commands.run('/tmp/sdk/run.sh')).stdout, 'ran\n');

      const dir = await sbx.files.mkdir('/tmp/sdk/d/e');
      assert.equal(dir.type, 'dir');
      const items = await sbx.files.list('/tmp/sdk');
      assert.deepEqual(
        items.map((i) => [i.name, i.type]),
        [
          ['a.txt', 'file'],
          ['d', 'dir'],
          ['run.sh', 'file'],
        ],
      );

      assert.equal(await sbx.files.exists('/tmp/sdk/a.txt'), true);
      assert.equal(await sbx.files.exists('/tmp/sdk/nope'), false);
      const moved = await sbx.files.rename('/tmp/sdk/a.txt', '/tmp/sdk/d/e/b.txt');
      assert.equal(moved.path, '/tmp/sdk/d/e/b.txt');
      assert.equal(await sbx.files.exists('/tmp/sdk/a.txt'), false);
      assert.equal(await sbx.files.read('/tmp/sdk/d/e/b.txt'), 'hello files');

      await sbx.files.remove('/tmp/sdk/run.sh');
      assert.equal(await sbx.files.exists('/tmp/sdk/run.sh'), false);
      await assert.rejects(sbx.files.remove('/tmp/sdk/d'), isCode('DIRECTORY_NOT_EMPTY'));
      await sbx.files.remove('/tmp/sdk/d', { recursive: true });
      assert.deepEqual(await sbx.files.list('/tmp/sdk'), []);
    });

    it('uploadFile/downloadFile move a 5 MB random file intact', async () => {
      const data = randomBytes(5 * 1024 * 1024);
      const local = join(tmp, 'random.bin');
      const back = join(tmp, 'random.back');
      writeFileSync(local, data);
      const up = await sbx.files.uploadFile(local, '/root/random.bin');
      assert.equal(up.size, data.length);
      const inside = await sbx.commands.run('sha256sum /root/random.bin');
      assert.equal(inside.stdout.split(' ')[0], sha256(data), 'intact inside the sandbox');
      const down = await sbx.files.downloadFile('/root/random.bin', back);
      assert.equal(down.size, data.length);
      assert.equal(sha256(readFileSync(back)), sha256(data), 'intact after the round trip');
    });

    it('errors are typed WarrenErrors with stable codes', async () => {
      await assert.rejects(sbx.files.read('/no/such/file'), (err: unknown) => {
        isCode('FILE_NOT_FOUND')(err);
        assert.equal((err as WarrenError).status, 404);
        return true;
      });
      await assert.rejects(sbx.files.stat('/no/such/file'), isCode('FILE_NOT_FOUND'));
      await assert.rejects(
        Sandbox.connect('sbx_0000000000000000', conn),
        isCode('SANDBOX_NOT_FOUND'),
      );
      await assert.rejects(
        Sandbox.create({ ...conn, template: 'no-such-template' }),
        isCode('TEMPLATE_NOT_FOUND'),
      );
      await assert.rejects(
        Sandbox.list({ apiUrl: p.url, apiKey: 'wrn_wrong' }),
        isCode('UNAUTHORIZED'),
      );
    });

    it('pause, resume, hibernate and wake; a command wakes it implicitly', async () => {
      assert.equal((await sbx.pause()).state, 'paused');
      assert.equal((await sbx.resume()).state, 'running');
      assert.equal((await sbx.hibernate()).state, 'hibernated');
      const r = await sbx.commands.run('echo awake');
      assert.equal(r.stdout, 'awake\n');
      assert.equal((await sbx.getInfo()).state, 'running');
      await assert.rejects(sbx.wake(), isCode('INVALID_STATE'));
    });

    it('snapshot, restore from it, fork and forkTree', async () => {
      await sbx.files.write('/root/sdk-state', 'v1');
      const snap = await sbx.snapshot();
      const restored = await Sandbox.create({ ...conn, fromSnapshot: snap.id });
      const disk = await sbx.fork({ metadata: { kind: 'disk' } });
      const tree = await sbx.forkTree(2);
      try {
        assert.equal(restored.info.snapshot_id, snap.id);
        assert.equal(await restored.files.read('/root/sdk-state'), 'v1');
        assert.deepEqual([disk.info.fork_kind, disk.info.lineage], ['disk', [sbx.id]]);
        assert.equal(await disk.files.read('/root/sdk-state'), 'v1');
        assert.equal(tree.children.length, 2);
        assert.ok(tree.parentPauseMs > 0);
        assert.equal((await tree.children[0]!.commands.run('cat /root/sdk-state')).stdout, 'v1');
      } finally {
        for (const s2 of [restored, disk, ...tree.children]) await s2.kill();
        await Sandbox.deleteSnapshot(snap.id, conn);
      }
    });

    it('sandbox.kill() destroys it; afterwards it is stopped and refuses work', async () => {
      await sbx.kill();
      const info = await sbx.getInfo();
      assert.deepEqual([info.state, info.stop_reason], ['stopped', 'deleted']);
      await assert.rejects(sbx.commands.run('true'), isCode('SANDBOX_NOT_RUNNING'));
      await assert.rejects(sbx.files.read('/etc/hostname'), isCode('SANDBOX_NOT_RUNNING'));
      assert.deepEqual(await Sandbox.list({ ...conn, metadata: { suite: 'sdk' } }), []);
    });
  });

  describe('CLI', () => {
    it('sandbox create/ls/exec/cp/kill and template ls', async () => {
      const created = await cli(['sandbox', 'create', '--json', '-m', 'suite=cli']);
      assert.equal(created.code, 0, created.stderr);
      const info = JSON.parse(created.stdout) as { id: string; state: string; metadata: object };
      const id = info.id;
      try {
        assert.match(id, /^sbx_[0-9a-z]{16}$/);
        assert.equal(info.state, 'running');
        assert.deepEqual(info.metadata, { suite: 'cli' });

        const ls = await cli(['sandbox', 'ls']);
        assert.equal(ls.code, 0, ls.stderr);
        const [header, ...lines] = ls.stdout.trimEnd().split('\n');
        assert.match(header!, /^ID\s+TEMPLATE\s+STATE\s+CREATED\s+EXPIRES$/);
        const mine = lines.find((l) => l.startsWith(id));
        assert.ok(mine, ls.stdout);
        assert.match(mine, new RegExp(`^${id}\\s+base\\s+running\\s+`));

        const ex = await cli([
          'sandbox',
          'exec',
          id,
          '--',
          'sh',
          '-c',
          'echo hi; echo oops >&2; exit 3',
        ]);
        assert.equal(ex.code, 3, 'the exit code is propagated');
        assert.equal(ex.stdout, 'hi\n');
        assert.equal(ex.stderr, 'oops\n');

        // cp into the sandbox (a directory destination keeps the name), then back out.
        const content = `cli copy ${randomBytes(8).toString('hex')}\n`;
        writeFileSync(join(tmp, 'up.txt'), content);
        const up = await cli(['sandbox', 'cp', join(tmp, 'up.txt'), `${id}:/root/`]);
        assert.equal(up.code, 0, up.stderr);
        const cat = await cli(['sandbox', 'exec', id, '--', 'cat', '/root/up.txt']);
        assert.equal(cat.stdout, content);
        const down = await cli(['sandbox', 'cp', `${id}:/root/up.txt`, join(tmp, 'down.txt')]);
        assert.equal(down.code, 0, down.stderr);
        assert.equal(readFileSync(join(tmp, 'down.txt'), 'utf8'), content);

        const templates = await cli(['template', 'ls']);
        assert.equal(templates.code, 0, templates.stderr);
        assert.match(templates.stdout, /^NAME\s+STATE\s+CPU\s+MEMORY\s+BUILT\n/);
        assert.match(templates.stdout, /\nbase\s+ready\s+/);
        const viaSdk = await listTemplates(conn);
        assert.ok(viaSdk.some((t) => t.name === 'base' && t.state === 'ready'));

        const kill = await cli(['sandbox', 'kill', id]);
        assert.equal(kill.code, 0, kill.stderr);
        assert.equal(kill.stdout, `${id}\n`);
        const after = await p.json(`/v1/sandboxes/${id}`);
        assert.deepEqual([after.state, after.stop_reason], ['stopped', 'deleted']);

        // The audit log shows this sandbox's calls, newest first, through the CLI and the SDK.
        const audit = await cli(['audit', '--resource', id]);
        assert.equal(audit.code, 0, audit.stderr);
        const [auditHeader, ...auditLines] = audit.stdout.trimEnd().split('\n');
        assert.match(auditHeader!, /^ID\s+WHEN\s+ACTOR\s+ACTION\s+RESOURCE\s+STATUS\s+ERROR$/);
        assert.match(auditLines[0]!, new RegExp(`DELETE /v1/sandboxes/:id\\s+${id}\\s+200`));
        assert.match(auditLines.at(-1)!, new RegExp(`POST /v1/sandboxes\\s+${id}\\s+201`));
        const page = await Audit.list({ resource_id: id, action: 'POST /v1/sandboxes*' }, conn);
        assert.ok(page.items.length >= 2, 'the create, exec and cp calls');
        assert.ok(page.items.every((e) => e.action.startsWith('POST /v1/sandboxes')));
      } finally {
        await p.api(`/v1/sandboxes/${id}`, { method: 'DELETE' });
      }
    });

    it('reports API errors as `error [CODE]: ...` with exit status 1', async () => {
      const res = await cli(['sandbox', 'exec', 'sbx_0000000000000000', '--', 'true']);
      assert.equal(res.code, 1);
      assert.equal(res.stdout, '');
      assert.match(res.stderr, /^error \[SANDBOX_NOT_FOUND\]: .*sbx_0000000000000000/);
      const kill = await cli(['sandbox', 'kill', 'sbx_0000000000000000']);
      assert.equal(kill.code, 1);
      assert.match(kill.stderr, /^error \[SANDBOX_NOT_FOUND\]/);
    });
  });
});

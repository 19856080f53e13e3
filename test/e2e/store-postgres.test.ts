/**
 * The whole platform on the PostgreSQL store (WARREN_DATABASE_URL), on real
 * gVisor: sandboxes, exec, labels, volumes, audit, events, and a restart
 * that finds everything in the database; and a bad URL that fails the start
 * with a clear error and leaves nothing behind. The store lives in a private
 * cluster (store/pg-local.ts) that the suite removes.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { startLocalPostgres, type LocalPostgres } from '../../packages/server/src/store/pg-local';
import { createSandbox, exec, startTestPlatform } from '../fixture';

describe('platform on the PostgreSQL store (real gVisor)', () => {
  let pg: LocalPostgres;
  before(async () => {
    pg = await startLocalPostgres({ unsafeNoFsync: true });
  });
  after(async () => {
    await pg?.stop();
  });

  it('runs sandboxes, volumes and the audit log, and keeps them across a restart', async () => {
    const home = mkdtempSync('/tmp/wt-');
    const databaseUrl = await pg.createDatabase('platform');
    const made: string[] = [];
    try {
      const first = await startTestPlatform({
        home,
        databaseUrl,
        destroyOnClose: false,
        keepHome: true,
      });
      let id: string;
      try {
        assert.equal(existsSync(join(home, 'warren.db')), false, 'no SQLite file');
        const vol = await first.json('/v1/volumes', {
          method: 'POST',
          json: { name: 'data', size_mb: 32 },
        });
        made.push(`volume ${vol.name}`);
        id = await createSandbox(first, {
          template: 'base',
          memory_mb: 128,
          metadata: { team: 'red', 'app.kind': 'web' },
          env: { KEPT: 'yes' },
          volumes: [{ name: 'data', mount_path: '/data' }],
        });
        made.push(id);
        const r = await exec(first, id, {
          cmd: 'sh',
          args: ['-c', 'echo kept > /data/note && cat /data/note && echo $KEPT'],
        });
        assert.deepEqual([r.exit_code, r.stdout], [0, 'kept\nyes\n']);
        // A second writer is refused: the attach check runs in the database.
        const taken = await first.api('/v1/sandboxes', {
          method: 'POST',
          json: { template: 'base', volumes: [{ name: 'data', mount_path: '/data' }] },
        });
        assert.equal(taken.status, 409);
        assert.equal(
          ((await taken.json()) as { error: { code: string } }).error.code,
          'VOLUME_IN_USE',
        );

        const red = await first.json('/v1/sandboxes?metadata.team=red&metadata.app.kind=web');
        assert.deepEqual(
          red.items.map((s: { id: string }) => s.id),
          [id],
        );
        assert.deepEqual((await first.json('/v1/sandboxes?metadata.team=RED')).items, []);
        await first.json(`/v1/sandboxes/${id}/pause`, { method: 'POST' });
        await first.json(`/v1/sandboxes/${id}/resume`, { method: 'POST' });
      } finally {
        await first.close();
      }

      const second = await startTestPlatform({ home, databaseUrl, keepHome: true });
      try {
        assert.equal(second.adminToken, first.adminToken, 'the token is found in the database');
        const sbx = await second.json(`/v1/sandboxes/${id}`);
        assert.equal(sbx.state, 'running');
        assert.deepEqual(sbx.metadata, { team: 'red', 'app.kind': 'web' });
        const r = await exec(second, id, { cmd: 'cat', args: ['/data/note'] });
        assert.equal(r.stdout, 'kept\n');
        const events = await second.json(`/v1/sandboxes/${id}/events`);
        const items = events.items as { from_state: string | null; to_state: string }[];
        const states = items.map((e) => e.to_state);
        assert.deepEqual(states.slice(-3), ['running', 'paused', 'running'], states.join(','));
        for (let i = 1; i < items.length; i++)
          assert.equal(items[i]!.from_state, items[i - 1]!.to_state);
        const audit = await second.json(`/v1/audit?resource_id=${id}`);
        assert.ok(
          audit.items.some((e: { action: string }) => e.action === 'POST /v1/sandboxes/:id/exec'),
        );
        await second.json(`/v1/sandboxes/${id}`, { method: 'DELETE' });
        made.splice(made.indexOf(id), 1);
        await second.host.settle();
        assert.equal((await second.api('/v1/volumes/data', { method: 'DELETE' })).status, 204);
        made.splice(0);
        assert.deepEqual(second.runscContainers(), []);
      } finally {
        await second.stop();
      }
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
    assert.deepEqual(made, [], 'everything the test made is gone');
  });

  it('refuses to start on an unreachable database, with the reason and nothing left', async () => {
    const home = mkdtempSync('/tmp/wt-');
    try {
      await assert.rejects(
        // The private cluster's port: it listens on its Unix socket only, so nothing answers here.
        startTestPlatform({
          home,
          databaseUrl: `postgres://warren:secret@127.0.0.1:${pg.port}/warren`,
        }),
        (err: Error) =>
          /cannot open the PostgreSQL store at postgres:\/\/warren:\*\*\*@127\.0\.0\.1:\d+\/warren \(WARREN_DATABASE_URL\): connect ECONNREFUSED/.test(
            err.message,
          ),
      );
      assert.deepEqual(readdirSync(home), [], 'nothing was made');
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });
});

/** The store's sandbox list: keyset pagination, and the state, organisation and metadata filters. */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { WarrenError, type SandboxState } from '@warren/protocol';
import type { SandboxRecord, Store } from '../../src/store/store';
import { sandboxRecord } from './records';
import { openTestStore, STORE_KINDS, useTestStores } from './stores';

useTestStores();

for (const kind of STORE_KINDS)
  describe(`store (${kind}): list pagination and metadata filter`, () => {
    let store: Store;
    let n = 0;

    /** Ids in creation order: ties of created_at are broken by id. */
    const row = (over: Partial<SandboxRecord> & { created_at: string }): SandboxRecord =>
      sandboxRecord({ id: `sbx_${String(n++).padStart(16, '0')}`, ...over });

    const all = async (f: {
      state?: SandboxState;
      metadata?: Record<string, string>;
      limit: number;
      orgId?: string;
    }) => {
      const pages: string[][] = [];
      let cursor: string | undefined;
      do {
        const page = await store.listSandboxes({ orgId: 'org_a', metadata: {}, ...f, cursor });
        pages.push(page.rows.map((r) => r.id));
        cursor = page.nextCursor ?? undefined;
        assert.ok(pages.length < 50, 'pagination terminates');
      } while (cursor);
      return pages;
    };

    before(async () => {
      store = await openTestStore(kind);
      await store.ensureOrganisation('org_a', 'a');
      await store.ensureOrganisation('org_b', 'b');
    });
    after(async () => {
      await store?.close();
    });

    it('pages newest first, ties broken by id, every row exactly once, last cursor null', async () => {
      const t = (s: number) => new Date(Date.UTC(2030, 0, 1, 0, 0, s)).toISOString();
      // Three rows share one created_at: the cursor must not skip or repeat them.
      const times = [t(1), t(2), t(2), t(2), t(3), t(4), t(5)];
      const rows = times.map((created_at) => row({ created_at, metadata: { suite: 'page' } }));
      for (const r of [...rows].reverse()) await store.insertSandbox(r, 'test');
      const expected = [...rows]
        .sort((a, b) =>
          a.created_at === b.created_at
            ? a.id < b.id
              ? 1
              : -1
            : a.created_at < b.created_at
              ? 1
              : -1,
        )
        .map((r) => r.id);
      const f = { metadata: { suite: 'page' } };

      for (const limit of [1, 2, 3, 7, 8]) {
        const pages = await all({ ...f, limit });
        assert.deepEqual(pages.flat(), expected, `limit ${limit}`);
        assert.equal(
          pages.length,
          Math.max(1, Math.ceil(rows.length / limit)),
          `pages at limit ${limit}`,
        );
        for (const p of pages.slice(0, -1)) assert.equal(p.length, limit);
      }

      // Keyset pagination is stable: a row created between two pages does not shift the next page.
      const first = await store.listSandboxes({ orgId: 'org_a', ...f, limit: 3 });
      await store.insertSandbox(row({ created_at: t(9), metadata: { suite: 'page' } }), 'test');
      const next = await store.listSandboxes({
        orgId: 'org_a',
        ...f,
        limit: 3,
        cursor: first.nextCursor!,
      });
      assert.deepEqual(
        next.rows.map((r) => r.id),
        expected.slice(3, 6),
      );
    });

    it('rejects a malformed cursor with INVALID_REQUEST', async () => {
      for (const cursor of ['garbage', Buffer.from('no separator').toString('base64url')]) {
        await assert.rejects(
          store.listSandboxes({ orgId: 'org_a', metadata: {}, limit: 5, cursor }),
          (e: unknown) => e instanceof WarrenError && e.code === 'INVALID_REQUEST',
          cursor,
        );
      }
    });

    it('filters by state (stopped only on request) and by organisation', async () => {
      const t = '2031-01-01T00:00:00.000Z';
      const running = row({ created_at: t, metadata: { suite: 'state' } });
      const stopped = row({ created_at: t, metadata: { suite: 'state' }, state: 'stopped' });
      const other = row({ created_at: t, metadata: { suite: 'state' }, org_id: 'org_b' });
      for (const r of [running, stopped, other]) await store.insertSandbox(r, 'test');
      const f = { metadata: { suite: 'state' }, limit: 10 };
      assert.deepEqual((await all(f)).flat(), [running.id]);
      assert.deepEqual((await all({ ...f, state: 'stopped' })).flat(), [stopped.id]);
      assert.deepEqual((await all({ ...f, state: 'running' })).flat(), [running.id]);
      assert.deepEqual((await all({ ...f, orgId: 'org_b' })).flat(), [other.id]);
    });

    it('matches every metadata pair exactly, including keys with dots and spaces', async () => {
      const t = '2032-01-01T00:00:00.000Z';
      const labelled = (metadata: Record<string, string>) =>
        row({ created_at: t, metadata: { suite: 'meta', ...metadata } });
      const a = labelled({ team: 'red', env: 'prod' });
      const b = labelled({ team: 'red', env: 'dev' });
      const c = labelled({ team: 'blue' });
      const dotted = labelled({ 'app.kubernetes.io/name': 'web' });
      const spaced = labelled({ 'with space': 'v a l', "it's": '[0]' });
      const rows = [a, b, c, dotted, spaced];
      for (const r of rows) await store.insertSandbox(r, 'test');
      const ids = async (metadata: Record<string, string>) =>
        new Set((await all({ metadata: { suite: 'meta', ...metadata }, limit: 100 })).flat());

      assert.deepEqual(await ids({}), new Set(rows.map((r) => r.id)));
      assert.deepEqual(await ids({ team: 'red' }), new Set([a.id, b.id]));
      assert.deepEqual(
        await ids({ team: 'red', env: 'dev' }),
        new Set([b.id]),
        'all pairs must match',
      );
      assert.deepEqual(await ids({ team: 'green' }), new Set());
      assert.deepEqual(await ids({ nokey: 'red' }), new Set());
      assert.deepEqual(await ids({ team: 'RED' }), new Set(), 'values are case-sensitive');
      assert.deepEqual(await ids({ 'app.kubernetes.io/name': 'web' }), new Set([dotted.id]));
      assert.deepEqual(await ids({ 'with space': 'v a l', "it's": '[0]' }), new Set([spaced.id]));
      // Paging a filtered list.
      const pages = await all({ metadata: { suite: 'meta', team: 'red' }, limit: 1 });
      assert.deepEqual(new Set(pages.flat()), new Set([a.id, b.id]));
      assert.equal(pages.length, 2);
    });

    it('matches label keys that contain a double quote or a backslash', async () => {
      const t = '2033-01-01T00:00:00.000Z';
      const labelled = (metadata: Record<string, string>) =>
        row({ created_at: t, metadata: { suite: 'odd', ...metadata } });
      const quoted = labelled({ 'say "hi"': 'yes' });
      const slashed = labelled({ 'a\\b': 'yes' });
      const ab = labelled({ ab: 'x' });
      for (const r of [quoted, slashed, ab]) await store.insertSandbox(r, 'test');
      const ids = async (metadata: Record<string, string>) =>
        (await all({ metadata: { suite: 'odd', ...metadata }, limit: 100 })).flat();
      assert.deepEqual(await ids({ 'a"b': 'x' }), [], 'key a"b is not key ab');
      assert.deepEqual(await ids({ 'say "hi"': 'yes' }), [quoted.id]);
      assert.deepEqual(await ids({ 'a\\b': 'yes' }), [slashed.id]);
    });
  });

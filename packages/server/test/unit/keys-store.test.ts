/**
 * API keys at rest: the store holds a key's sha256 and its 12-character
 * prefix, never its text, on SQLite and PostgreSQL alike.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { sql } from 'kysely';
import { DEFAULT_ORG, ensureAdminToken, type Principal } from '../../src/auth';
import { UNRESTRICTED } from '../../src/keys/restriction';
import { KeyService } from '../../src/keys/service';
import type { Store } from '../../src/store/store';
import { openTestStore, STORE_KINDS, useTestStores } from './stores';

useTestStores();

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

for (const kind of STORE_KINDS)
  describe(`api keys at rest (${kind})`, () => {
    let store: Store;
    let keys: KeyService;
    let dir: string;
    let adminToken: string;
    let admin: Principal;

    /** Every row of api_tokens with every column the table has, as the database returns it. */
    const rawRows = async () =>
      (await sql<Record<string, unknown>>`select * from api_tokens`.execute(store.db)).rows;
    const rowOf = async (id: string) => {
      const row = (await rawRows()).find((r) => r.id === id);
      assert.ok(row, `a row for ${id}`);
      return row;
    };
    /** No column of any row holds the key's text, nor its secret part past the prefix. */
    const assertNowhere = async (key: string) => {
      const secret = key.slice(12);
      assert.equal(secret.length, 32);
      for (const row of await rawRows())
        for (const [column, value] of Object.entries(row)) {
          const text = value === null || value === undefined ? '' : String(value);
          assert.ok(!text.includes(key), `column ${column} holds the key`);
          assert.ok(!text.includes(secret), `column ${column} holds the key's secret part`);
        }
    };

    before(async () => {
      store = await openTestStore(kind);
      dir = mkdtempSync('/tmp/wkeys-');
      adminToken = await ensureAdminToken(store, join(dir, 'admin-token'));
      keys = new KeyService(store);
      admin = await keys.authenticate(`Bearer ${adminToken}`);
    });
    after(async () => {
      await store?.close();
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    it('the admin token is written to its file and stored as its sha256 only', async () => {
      assert.match(adminToken, /^wrn_[a-z0-9]{40}$/);
      assert.equal(readFileSync(join(dir, 'admin-token'), 'utf8'), adminToken + '\n');
      assert.equal(admin.orgId, DEFAULT_ORG);
      assert.ok(admin.installAdmin);
      const row = await rowOf(admin.tokenId);
      assert.equal(row.token_hash, sha256(adminToken));
      assert.equal(row.prefix, adminToken.slice(0, 12));
      await assertNowhere(adminToken);
    });

    it('a key made through the service is stored as its sha256, and found by it', async () => {
      const made = await keys.create(admin, {
        name: 'ci',
        scopes: ['sandboxes:read', 'exec'],
        ttl_seconds: 3600,
      });
      assert.match(made.key, /^wrn_[a-z0-9]{40}$/);
      const row = await rowOf(made.id);
      assert.equal(row.token_hash, sha256(made.key));
      assert.match(String(row.token_hash), /^[0-9a-f]{64}$/);
      assert.equal(row.prefix, made.key.slice(0, 12));
      assert.equal(row.name, 'ci');
      assert.equal(row.org_id, DEFAULT_ORG);
      assert.equal(row.created_by, admin.tokenId);
      assert.deepEqual(JSON.parse(String(row.scopes)), ['sandboxes:read', 'exec']);
      await assertNowhere(made.key);
      await assertNowhere(adminToken);

      // The hash is what authenticates: the key works, a key one character off does not.
      const p = await keys.authenticate(`Bearer ${made.key}`);
      assert.equal(p.tokenId, made.id);
      assert.deepEqual(p.scopes, ['sandboxes:read', 'exec']);
      assert.deepEqual(p.restriction, UNRESTRICTED);
      const last = made.key.at(-1) === 'a' ? 'b' : 'a';
      await assert.rejects(keys.authenticate(`Bearer ${made.key.slice(0, -1)}${last}`), {
        code: 'UNAUTHORIZED',
      });
      // Nor does the stored hash, sent as if it were the key.
      await assert.rejects(keys.authenticate(`Bearer ${String(row.token_hash)}`), {
        code: 'UNAUTHORIZED',
      });

      // Listings show the prefix, never the key or its hash.
      const listed = (await keys.list(admin)).find((k) => k.id === made.id);
      assert.ok(listed);
      assert.equal(listed.prefix, made.key.slice(0, 12));
      const shown = JSON.stringify(listed);
      assert.ok(!shown.includes(made.key.slice(12)), shown);
      assert.ok(!shown.includes(sha256(made.key)), shown);

      // Revoked: the row stays (for the audit trail) with revoked_at, and the key stops working.
      await keys.revoke(admin, made.id);
      assert.ok((await rowOf(made.id)).revoked_at);
      await assert.rejects(keys.authenticate(`Bearer ${made.key}`), { code: 'UNAUTHORIZED' });
      await assertNowhere(made.key);
    });
  });

/** Store queries of hosts and their join tokens (several hosts, docs/multi-host.md). */
import type { Kysely, Selectable } from 'kysely';
import type { Database, HostTable } from './schema';

export type HostRow = Selectable<HostTable>;

export class HostQueries {
  constructor(private readonly db: Kysely<Database>) {}

  async insertJoinToken(hash: string, expiresAt: number): Promise<void> {
    await this.db
      .insertInto('host_join_tokens')
      .values({
        token_hash: hash,
        created_at: new Date().toISOString(),
        expires_at: expiresAt,
        used_at: null,
        host_id: null,
      })
      .execute();
  }

  /** Marks an unused, unexpired token used by `hostId`; false when it was not such a token. */
  async useJoinToken(hash: string, hostId: string, now: number): Promise<boolean> {
    const r = await this.db
      .updateTable('host_join_tokens')
      .set({ used_at: new Date(now).toISOString(), host_id: hostId })
      .where('token_hash', '=', hash)
      .where('used_at', 'is', null)
      .where('expires_at', '>', now)
      .executeTakeFirst();
    return Number(r.numUpdatedRows) === 1;
  }

  async insert(row: HostRow): Promise<void> {
    await this.db.insertInto('hosts').values(row).execute();
  }

  async get(id: string): Promise<HostRow | undefined> {
    return this.db.selectFrom('hosts').selectAll().where('id', '=', id).executeTakeFirst();
  }

  async list(): Promise<HostRow[]> {
    return this.db.selectFrom('hosts').selectAll().orderBy('joined_at').orderBy('id').execute();
  }

  async update(id: string, set: Partial<Omit<HostRow, 'id'>>): Promise<void> {
    await this.db.updateTable('hosts').set(set).where('id', '=', id).execute();
  }

  /**
   * Marks lost, under a new epoch, a host whose lease ran out, if it still
   * held that lease: of several control planes, one wins. True for the winner.
   */
  async expire(id: string, leaseExpiresAt: number, reason: string): Promise<boolean> {
    const r = await this.db
      .updateTable('hosts')
      .set((eb) => ({ state: 'lost', state_reason: reason, epoch: eb('epoch', '+', 1) }))
      .where('id', '=', id)
      .where('lease_expires_at', '=', leaseExpiresAt)
      .where('state', '!=', 'lost')
      .executeTakeFirst();
    return Number(r.numUpdatedRows) === 1;
  }

  async remove(id: string): Promise<void> {
    await this.db.deleteFrom('hosts').where('id', '=', id).execute();
  }
}

/** Store queries of API keys (the api_tokens table) and organisations. */
import type { Kysely, Selectable } from 'kysely';
import type { ApiTokenTable, Database, OrganisationTable } from './schema';

export type KeyRow = Selectable<ApiTokenTable>;
export type OrganisationRow = Selectable<OrganisationTable>;

export class KeyQueries {
  constructor(private readonly db: Kysely<Database>) {}

  async insert(row: KeyRow): Promise<void> {
    await this.db.insertInto('api_tokens').values(row).execute();
  }

  /** A key that is not revoked, by the hash of its text (expired ones too: the caller says why). */
  async byHash(hash: string): Promise<KeyRow | undefined> {
    return this.db
      .selectFrom('api_tokens')
      .selectAll()
      .where('token_hash', '=', hash)
      .where('revoked_at', 'is', null)
      .executeTakeFirst();
  }

  async get(orgId: string, id: string): Promise<KeyRow | undefined> {
    return this.db
      .selectFrom('api_tokens')
      .selectAll()
      .where('org_id', '=', orgId)
      .where('id', '=', id)
      .where('revoked_at', 'is', null)
      .executeTakeFirst();
  }

  /** Keys of an organisation that are not revoked, newest first. */
  async list(orgId: string): Promise<KeyRow[]> {
    return this.db
      .selectFrom('api_tokens')
      .selectAll()
      .where('org_id', '=', orgId)
      .where('revoked_at', 'is', null)
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .execute();
  }

  async revoke(id: string, at: string): Promise<void> {
    await this.db.updateTable('api_tokens').set({ revoked_at: at }).where('id', '=', id).execute();
  }

  async touch(id: string, at: string): Promise<void> {
    await this.db
      .updateTable('api_tokens')
      .set({ last_used_at: at })
      .where('id', '=', id)
      .execute();
  }

  async setPrefix(id: string, prefix: string): Promise<void> {
    await this.db.updateTable('api_tokens').set({ prefix }).where('id', '=', id).execute();
  }

  async insertOrganisation(row: OrganisationRow): Promise<void> {
    await this.db.insertInto('organisations').values(row).execute();
  }

  async organisation(id: string): Promise<OrganisationRow | undefined> {
    return this.db.selectFrom('organisations').selectAll().where('id', '=', id).executeTakeFirst();
  }

  async organisations(): Promise<OrganisationRow[]> {
    return this.db.selectFrom('organisations').selectAll().orderBy('created_at').execute();
  }
}

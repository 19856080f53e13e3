/** Which organisation built a template through the API; templates without a row are official. */
import type { Kysely } from 'kysely';
import type { Database } from './schema';

export class TemplateOwnerQueries {
  constructor(private readonly db: Kysely<Database>) {}

  /** The owning organisation of a template built through the API; undefined for official ones. */
  async templateOwner(name: string): Promise<string | undefined> {
    const row = await this.db
      .selectFrom('template_owners')
      .select('org_id')
      .where('name', '=', name)
      .executeTakeFirst();
    return row?.org_id;
  }

  async templateOwners(): Promise<Map<string, string>> {
    const rows = await this.db.selectFrom('template_owners').select(['name', 'org_id']).execute();
    return new Map(rows.map((r) => [r.name, r.org_id]));
  }

  async setTemplateOwner(name: string, orgId: string): Promise<void> {
    await this.db
      .insertInto('template_owners')
      .values({ name, org_id: orgId, created_at: new Date().toISOString() })
      .onConflict((oc) => oc.column('name').doUpdateSet({ org_id: orgId }))
      .execute();
  }

  async removeTemplateOwner(name: string): Promise<void> {
    await this.db.deleteFrom('template_owners').where('name', '=', name).execute();
  }
}

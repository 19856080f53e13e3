/** Store queries of databases, their events and their base backups. */
import type { Kysely, Selectable } from 'kysely';
import type { Database, DatabaseBackupTable, DatabaseTable } from './schema';

export type DatabaseRow = Selectable<DatabaseTable>;
export type BackupRow = Selectable<DatabaseBackupTable>;

export interface DatabaseRecord extends Omit<DatabaseRow, 'metadata'> {
  metadata: Record<string, string>;
}

function decode(row: DatabaseRow): DatabaseRecord {
  return { ...row, metadata: JSON.parse(row.metadata) as Record<string, string> };
}

export class DatabaseQueries {
  constructor(private readonly db: Kysely<Database>) {}

  async insert(rec: DatabaseRecord, message: string): Promise<void> {
    await this.db
      .insertInto('databases')
      .values({ ...rec, metadata: JSON.stringify(rec.metadata) })
      .execute();
    await this.event(rec.id, 'created', message);
  }

  async get(orgId: string, id: string): Promise<DatabaseRecord | undefined> {
    const row = await this.db
      .selectFrom('databases')
      .selectAll()
      .where('org_id', '=', orgId)
      .where('id', '=', id)
      .executeTakeFirst();
    return row && decode(row);
  }

  async byId(id: string): Promise<DatabaseRecord | undefined> {
    const row = await this.db
      .selectFrom('databases')
      .selectAll()
      .where('id', '=', id)
      .executeTakeFirst();
    return row && decode(row);
  }

  async list(orgId: string): Promise<DatabaseRecord[]> {
    const rows = await this.db
      .selectFrom('databases')
      .selectAll()
      .where('org_id', '=', orgId)
      .orderBy('created_at', 'desc')
      .orderBy('id')
      .execute();
    return rows.map(decode);
  }

  /** Every database on a host (of all organisations): the watch loop's work list. */
  async onHost(hostId: string | readonly string[]): Promise<DatabaseRecord[]> {
    const rows = await this.db
      .selectFrom('databases')
      .selectAll()
      .where('host_id', 'in', typeof hostId === 'string' ? [hostId] : [...hostId])
      .execute();
    return rows.map(decode);
  }

  async update(id: string, patch: Partial<Omit<DatabaseRecord, 'id'>>): Promise<void> {
    const { metadata, ...rest } = patch;
    await this.db
      .updateTable('databases')
      .set({ ...rest, ...(metadata && { metadata: JSON.stringify(metadata) }) })
      .where('id', '=', id)
      .execute();
  }

  async remove(id: string): Promise<void> {
    await this.db.deleteFrom('databases').where('id', '=', id).execute();
    await this.db.deleteFrom('database_events').where('database_id', '=', id).execute();
    await this.db.deleteFrom('database_backups').where('database_id', '=', id).execute();
  }

  async event(databaseId: string, kind: string, message: string): Promise<void> {
    await this.db
      .insertInto('database_events')
      .values({ database_id: databaseId, at: new Date().toISOString(), kind, message })
      .execute();
  }

  async events(databaseId: string): Promise<Array<{ at: string; kind: string; message: string }>> {
    return this.db
      .selectFrom('database_events')
      .select(['at', 'kind', 'message'])
      .where('database_id', '=', databaseId)
      .orderBy('id')
      .execute();
  }

  async addBackup(row: Omit<BackupRow, 'id'>): Promise<void> {
    await this.db.insertInto('database_backups').values(row).execute();
  }

  /** Base backups, oldest first. */
  async backups(databaseId: string): Promise<BackupRow[]> {
    return this.db
      .selectFrom('database_backups')
      .selectAll()
      .where('database_id', '=', databaseId)
      .orderBy('id')
      .execute();
  }
}

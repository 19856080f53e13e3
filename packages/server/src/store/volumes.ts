/**
 * Store queries of volumes and their attachments. Attaching checks and
 * records in one transaction, so two sandboxes can never both win a writable
 * attach: SQLite runs one transaction at a time; on PostgreSQL the volume's
 * row is locked (SELECT ... FOR UPDATE) before its attachments are read, so
 * attaches and deletes of one volume wait for each other, from any process.
 */
import type { Kysely, Selectable } from 'kysely';
import { WarrenError, type VolumeAttachment } from '@warren/protocol';
import { isPostgres, isUniqueViolation } from './dialect';
import type { Database, VolumeAttachmentTable, VolumeTable } from './schema';

export type VolumeRow = Selectable<VolumeTable>;
export type AttachmentRow = Selectable<VolumeAttachmentTable>;

export class VolumeQueries {
  constructor(private readonly db: Kysely<Database>) {}

  async insert(row: VolumeRow): Promise<void> {
    try {
      await this.db.insertInto('volumes').values(row).execute();
    } catch (err) {
      if (isUniqueViolation(err))
        throw new WarrenError('VOLUME_EXISTS', `a volume named ${row.name} already exists`);
      throw err;
    }
  }

  async get(orgId: string, name: string): Promise<VolumeRow | undefined> {
    return this.db
      .selectFrom('volumes')
      .selectAll()
      .where('org_id', '=', orgId)
      .where((eb) => eb.or([eb('name', '=', name), eb('id', '=', name)]))
      .executeTakeFirst();
  }

  async list(orgId: string): Promise<VolumeRow[]> {
    return this.db
      .selectFrom('volumes')
      .selectAll()
      .where('org_id', '=', orgId)
      .orderBy('name')
      .execute();
  }

  /** Every volume record (of all organisations): to mount them at start. */
  async all(): Promise<VolumeRow[]> {
    return this.db.selectFrom('volumes').selectAll().execute();
  }

  async attachments(volumeId: string): Promise<AttachmentRow[]> {
    return this.db
      .selectFrom('volume_attachments')
      .selectAll()
      .where('volume_id', '=', volumeId)
      .orderBy('created_at')
      .execute();
  }

  /** Deletes the record unless something holds the volume (VOLUME_IN_USE). */
  async deleteUnattached(volume: VolumeRow): Promise<void> {
    await this.db.transaction().execute(async (tx) => {
      if (isPostgres(tx))
        await tx
          .selectFrom('volumes')
          .select('id')
          .where('id', '=', volume.id)
          .forUpdate()
          .execute();
      const held = await tx
        .selectFrom('volume_attachments')
        .select('sandbox_id')
        .where('volume_id', '=', volume.id)
        .execute();
      if (held.length > 0)
        throw new WarrenError(
          'VOLUME_IN_USE',
          `volume ${volume.name} is attached to ${held.map((h) => h.sandbox_id).join(', ')}`,
          { sandbox_ids: held.map((h) => h.sandbox_id) },
        );
      await tx.deleteFrom('volumes').where('id', '=', volume.id).execute();
    });
  }

  /**
   * Attaches volumes to a sandbox, all or none. A writable attach needs the
   * volume free; a read-only one needs no writable holder.
   */
  async attach(orgId: string, sandboxId: string, reqs: VolumeAttachment[]): Promise<VolumeRow[]> {
    return this.db.transaction().execute(async (tx) => {
      const out: VolumeRow[] = [];
      // All rows locked at once, in name order: two attaches of the same volumes cannot deadlock.
      if (isPostgres(tx) && reqs.length > 0)
        await tx
          .selectFrom('volumes')
          .select('id')
          .where('org_id', '=', orgId)
          .where(
            'name',
            'in',
            reqs.map((r) => r.name),
          )
          .orderBy('name')
          .forUpdate()
          .execute();
      for (const req of reqs) {
        const vol = await tx
          .selectFrom('volumes')
          .selectAll()
          .where('org_id', '=', orgId)
          .where('name', '=', req.name)
          .executeTakeFirst();
        if (!vol) throw new WarrenError('VOLUME_NOT_FOUND', `volume ${req.name} does not exist`);
        const held = await tx
          .selectFrom('volume_attachments')
          .selectAll()
          .where('volume_id', '=', vol.id)
          .execute();
        const writer = held.find((h) => h.read_only === 0);
        if (writer || (!req.read_only && held.length > 0)) {
          throw new WarrenError(
            'VOLUME_IN_USE',
            writer
              ? `volume ${vol.name} is attached writable to ${writer.sandbox_id}`
              : `volume ${vol.name} is attached read-only to ${held.map((h) => h.sandbox_id).join(', ')}; a writable attach must be the only one`,
            { sandbox_ids: held.map((h) => h.sandbox_id) },
          );
        }
        await tx
          .insertInto('volume_attachments')
          .values({
            volume_id: vol.id,
            sandbox_id: sandboxId,
            mount_path: req.mount_path,
            read_only: req.read_only ? 1 : 0,
            created_at: new Date().toISOString(),
          })
          .execute();
        out.push(vol);
      }
      return out;
    });
  }

  async detachAll(sandboxId: string): Promise<void> {
    await this.db.deleteFrom('volume_attachments').where('sandbox_id', '=', sandboxId).execute();
  }
}

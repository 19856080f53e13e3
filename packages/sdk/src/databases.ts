/**
 * Managed PostgreSQL databases: `Database.create({ label })` answers once the
 * database takes queries, with `connection_url` and `pooled_url` (add
 * `?sslmode=require`, or `verify-full` with `Database.caCertificate()`).
 */
import type {
  BranchDatabaseRequest,
  CreateDatabaseRequest,
  Database as DatabaseInfo,
  RestoreDatabaseRequest,
  UpdateDatabaseRequest,
} from '@warren/protocol';
import { HttpClient } from './client';
import type { ConnectionOptions } from './config';

const path = (id: string, rest = '') => `/v1/databases/${encodeURIComponent(id)}${rest}`;

export interface DatabaseEvent {
  at: string;
  kind: string;
  message: string;
}

export const Database = {
  create(req: CreateDatabaseRequest, opts: ConnectionOptions = {}): Promise<DatabaseInfo> {
    return new HttpClient(opts).json('POST', '/v1/databases', { json: req });
  },

  async list(opts: ConnectionOptions = {}): Promise<DatabaseInfo[]> {
    return (await new HttpClient(opts).json<{ items: DatabaseInfo[] }>('GET', '/v1/databases'))
      .items;
  },

  get(id: string, opts: ConnectionOptions = {}): Promise<DatabaseInfo> {
    return new HttpClient(opts).json('GET', path(id));
  },

  update(
    id: string,
    req: UpdateDatabaseRequest,
    opts: ConnectionOptions = {},
  ): Promise<DatabaseInfo> {
    return new HttpClient(opts).json('PATCH', path(id), { json: req });
  },

  /** Deletes the database, its data and its archive. */
  async delete(id: string, opts: ConnectionOptions = {}): Promise<void> {
    await new HttpClient(opts).json('DELETE', path(id));
  },

  /** A new password; the old one stops working at once. */
  rotatePassword(id: string, opts: ConnectionOptions = {}): Promise<DatabaseInfo> {
    return new HttpClient(opts).json('POST', path(id, '/password'));
  },

  /** A new database restored from this one's archive (at target_time, or the latest). */
  restore(
    id: string,
    req: RestoreDatabaseRequest = {},
    opts: ConnectionOptions = {},
  ): Promise<DatabaseInfo> {
    return new HttpClient(opts).json('POST', path(id, '/restore'), { json: req });
  },

  /** A new database with this one's data as of now. */
  branch(
    id: string,
    req: BranchDatabaseRequest = {},
    opts: ConnectionOptions = {},
  ): Promise<DatabaseInfo> {
    return new HttpClient(opts).json('POST', path(id, '/branches'), { json: req });
  },

  async events(id: string, opts: ConnectionOptions = {}): Promise<DatabaseEvent[]> {
    return (await new HttpClient(opts).json<{ items: DatabaseEvent[] }>('GET', path(id, '/events')))
      .items;
  },

  async logs(id: string, lines = 200, opts: ConnectionOptions = {}): Promise<string[]> {
    const res = await new HttpClient(opts).json<{ lines: string[] }>(
      'GET',
      `${path(id, '/logs')}?lines=${lines}`,
    );
    return res.lines;
  },

  /** The install's database CA (PEM): `sslrootcert` for `sslmode=verify-full`. */
  async caCertificate(opts: ConnectionOptions = {}): Promise<string> {
    return (await new HttpClient(opts).request('GET', '/v1/databases/ca.pem')).text();
  },
};

/**
 * The URLs a database is reached by. Both go to the one front door; the
 * endpoint (`<id>` direct, `<id>-pooler` through PgBouncer) rides in the user
 * name, which every client passes on, so the URL needs no query string and
 * `?sslmode=require` can be appended as it is.
 */
export interface DatabaseAddress {
  host: string;
  port: number;
}

export function databaseUrl(
  a: DatabaseAddress,
  o: { id: string; user: string; password: string; database: string; pooled: boolean },
): string {
  const endpoint = o.pooled ? `${o.id}-pooler` : o.id;
  const host = a.host.includes(':') ? `[${a.host}]` : a.host;
  const user = encodeURIComponent(`${o.user}.${endpoint}`);
  return `postgresql://${user}:${encodeURIComponent(o.password)}@${host}:${a.port}/${encodeURIComponent(o.database)}`;
}

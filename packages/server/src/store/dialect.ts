/**
 * What differs between the two stores, in one place: column types for the
 * migrations, and the few queries SQLite and PostgreSQL spell differently.
 * Everything else is plain Kysely and runs on both.
 */
import {
  PostgresAdapter,
  sql,
  type ColumnDefinitionBuilder,
  type CreateTableBuilder,
  type Expression,
  type Kysely,
  type SqlBool,
} from 'kysely';

/** A column's type as the schema builder takes it: a name or an SQL expression. */
export type DataTypeExpression = Parameters<CreateTableBuilder<string>['addColumn']>[1];

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export function isPostgres(db: Kysely<any>): boolean {
  return db.getExecutor().adapter instanceof PostgresAdapter;
}

export interface ColumnTypes {
  /**
   * Text compared byte by byte, as SQLite does: on PostgreSQL the column gets
   * the "C" collation, so ordering and keyset cursors do not depend on the
   * database's locale.
   */
  text: DataTypeExpression;
  /** 64-bit integers on both (SQLite's INTEGER is; PostgreSQL's `integer` is 32-bit). */
  int: DataTypeExpression;
  /** 64-bit floats on both (PostgreSQL's `real` is 32-bit). */
  real: DataTypeExpression;
  /** An integer primary key the database numbers. */
  serial: (c: ColumnDefinitionBuilder) => ColumnDefinitionBuilder;
}

export function columnTypes(db: Kysely<unknown>): ColumnTypes {
  if (!isPostgres(db)) {
    return {
      text: 'text',
      int: 'integer',
      real: 'real',
      // INTEGER PRIMARY KEY is the rowid: it must be spelled exactly so.
      serial: (c) => c.primaryKey().autoIncrement(),
    };
  }
  return {
    text: sql`text collate "C"`,
    int: 'bigint',
    real: 'double precision',
    serial: (c) => c.primaryKey().generatedByDefaultAsIdentity(),
  };
}

/**
 * True when the JSON object in `column` (text) has `key` with the string
 * `value`. Both are bound as parameters, never spliced into a JSON path.
 */
export function jsonHasPair(
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  db: Kysely<any>,
  column: string,
  key: string,
  value: string,
): Expression<SqlBool> {
  const ref = sql.ref(column);
  return isPostgres(db)
    ? sql<SqlBool>`exists (select 1 from json_each_text(${ref}::json) as kv where kv.key = ${key} and kv.value = ${value})`
    : sql<SqlBool>`exists (select 1 from json_each(${ref}) where key = ${key} and value = ${value})`;
}

/** The larger of two values: SQLite's two-argument max(), PostgreSQL's greatest(). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export function greatest(db: Kysely<any>, a: string, b: string): Expression<number> {
  return isPostgres(db)
    ? sql<number>`greatest(${sql.ref(a)}, ${sql.ref(b)})`
    : sql<number>`max(${sql.ref(a)}, ${sql.ref(b)})`;
}

/**
 * A unique or primary key constraint refused the write: SQLITE_CONSTRAINT_*
 * from better-sqlite3, SQLSTATE 23505 from pg.
 */
export function isUniqueViolation(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return (
    code === '23505' ||
    code === 'SQLITE_CONSTRAINT_UNIQUE' ||
    code === 'SQLITE_CONSTRAINT_PRIMARYKEY'
  );
}

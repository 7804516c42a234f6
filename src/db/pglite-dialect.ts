import type { PGlite } from '@electric-sql/pglite';
import {
  CompiledQuery,
  type DatabaseConnection,
  type Dialect,
  type Driver,
  type Kysely,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  type QueryResult,
  type TransactionSettings,
} from 'kysely';
import { copyDataOf } from './copy-from-stdin.js';

/**
 * Kysely on embedded PGlite: its one connection, handed to one query or transaction at a time in
 * the order asked for.
 *
 * PGlite runs PostgreSQL synchronously on this thread and answers through promises only, so a
 * chain of queries never gives the event loop a turn: one request's work (its queries, the append
 * and the projection batch that append wakes) ran to its end before the next request was even
 * read, the group commit and the projection runner saw one request at a time, and each paid a
 * whole batch (issue #7: 124 earns/s). Every acquisition first waits for the event loop
 * (`setImmediate`), so the requests already received get to queue their work, and a batch that
 * then gets the connection takes all of it.
 */
export class PGliteDialect implements Dialect {
  constructor(private readonly pglite: PGlite) {}

  createAdapter() {
    return new PostgresAdapter();
  }

  createDriver(): Driver {
    return new PGliteDriver(this.pglite);
  }

  createQueryCompiler() {
    return new PostgresQueryCompiler();
  }

  createIntrospector(db: Kysely<unknown>) {
    return new PostgresIntrospector(db);
  }
}

class PGliteDriver implements Driver {
  private readonly connection: PGliteConnection;
  private held = false;
  private readonly waiting: Array<() => void> = [];

  constructor(private readonly pglite: PGlite) {
    this.connection = new PGliteConnection(pglite);
  }

  async init(): Promise<void> {}

  async acquireConnection(): Promise<DatabaseConnection> {
    await new Promise<void>((resolve) => setImmediate(resolve));
    if (this.held) await new Promise<void>((resolve) => this.waiting.push(resolve));
    this.held = true;
    return this.connection;
  }

  async releaseConnection(): Promise<void> {
    const next = this.waiting.shift();
    if (next) next();
    else this.held = false;
  }

  async beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    const begin = settings.isolationLevel ? `start transaction isolation level ${settings.isolationLevel}` : 'begin';
    await connection.executeQuery(CompiledQuery.raw(begin));
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('commit'));
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('rollback'));
  }

  async savepoint(connection: DatabaseConnection, name: string): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw(`savepoint ${identifier(name)}`));
  }

  async rollbackToSavepoint(connection: DatabaseConnection, name: string): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw(`rollback to savepoint ${identifier(name)}`));
  }

  async releaseSavepoint(connection: DatabaseConnection, name: string): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw(`release savepoint ${identifier(name)}`));
  }

  async destroy(): Promise<void> {
    await this.pglite.close();
  }
}

/** A name as a quoted SQL identifier. */
const identifier = (name: string) => `"${name.replaceAll('"', '""')}"`;

class PGliteConnection implements DatabaseConnection {
  constructor(private readonly pglite: PGlite) {}

  async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    const copied = copyDataOf(query.sql, query.parameters);
    // PGlite reads a copy's rows from a blob it calls /dev/blob (see `copyFromStdin`).
    const result =
      copied === undefined
        ? await this.pglite.query<R>(query.sql, [...query.parameters])
        : await this.pglite.query<R>(`${query.sql.slice(0, -'stdin'.length)}'/dev/blob'`, [], { blob: new Blob([copied]) });
    return {
      rows: result.rows,
      ...(result.affectedRows !== undefined ? { numAffectedRows: BigInt(result.affectedRows) } : {}),
    };
  }

  async *streamQuery<R>(query: CompiledQuery, chunkSize = 100): AsyncIterableIterator<QueryResult<R>> {
    const { rows } = await this.executeQuery<R>(query);
    for (let i = 0; i < rows.length; i += chunkSize) yield { rows: rows.slice(i, i + chunkSize) };
  }
}

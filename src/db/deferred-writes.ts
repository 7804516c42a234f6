import { CompiledQuery, type DatabaseConnection, type Dialect, type Driver, type QueryResult, type Transaction, type TransactionSettings } from 'kysely';
import { copyDataOf } from './copy-from-stdin.js';
import type { Database } from './schema.js';

/** The queries marked with `deferredWrite`: compiled objects, so the mark costs nothing to test and goes with them. */
const deferrable = new WeakSet<CompiledQuery>();

/**
 * Marks a write that may wait, inside a transaction, for the next statement of that transaction
 * that cannot: writes waiting together travel as ONE statement (each a `with` clause of it), so a
 * projection batch that writes four tables and moves its checkpoints spends one round trip on it
 * instead of five. On these machines a round trip costs more than the statement's own work
 * (docs/performance.md).
 *
 * Only for a plain `insert`, `update` or `delete` (no `with` of its own), or a `copyFromStdin`
 * (which travels as a statement of its own, before the rest), whose result nobody reads
 * (it answers no rows), and which neither reads nor changes rows that an earlier deferred write of
 * the same transaction may have changed: the writes of one statement see the same snapshot, and
 * none sees another's effect. Every other statement of the transaction (a read, a write not
 * marked, the commit) sends the waiting writes first, so it sees them as if each had run alone.
 * Outside a transaction a marked write runs at once. A failing write fails the statement that
 * carried it, and the transaction with it.
 *
 * @example
 * await trx.executeQuery(deferredWrite(CompiledQuery.raw('update customers set … where id = $1', [id])));
 */
export function deferredWrite(query: CompiledQuery): CompiledQuery {
  deferrable.add(query);
  return query;
}

/** The reads marked with `readAheadOfWaitingWrites`. */
const readsAhead = new WeakSet<CompiledQuery>();

/**
 * Marks a read that goes to the connection at once, ahead of the transaction's waiting writes
 * (those deferred since the last statement sent), which keep waiting: it sees the transaction as
 * it was before them. For a caller that knows what those writes change and corrects the answer
 * itself: a rebuild reads the lots of its next page while the writes of the page before still wait
 * to be sent (src/projections/customers/lot-book.ts, `LotBook.readAhead`). What was sent early
 * (`sendWaitingWrites`) goes before it, as before every statement. Outside a transaction it is a
 * plain read.
 */
export function readAheadOfWaitingWrites(query: CompiledQuery): CompiledQuery {
  readsAhead.add(query);
  return query;
}

/** The statements `sendWaitingWrites` passes to the connection, each with the answer of the writes it sent. */
const earlySends = new WeakMap<CompiledQuery, { answered: Promise<unknown> }>();

/**
 * Sends the transaction's waiting writes now, without waiting for their answer: `answered` settles
 * when PostgreSQL has executed them (rejecting if they fail). The transaction's later statements,
 * its commit included, are sent after them, each once the one before is answered (the connection
 * is never handed a statement while another is out), and fail with their error if they fail.
 * For a caller with JavaScript to do meanwhile: a rebuild builds its next page while the writes of
 * the last one run (src/projections/rebuild.ts).
 */
export async function sendWaitingWrites(trx: Pick<Transaction<Database>, 'executeQuery'>): Promise<{ answered: Promise<unknown> }> {
  const mark = CompiledQuery.raw('select null');
  const sent = { answered: Promise.resolve() as Promise<unknown> };
  earlySends.set(mark, sent);
  await trx.executeQuery(mark); // a connection that defers nothing runs it: there was nothing to send
  return sent;
}

/** A dialect whose transactions hold `deferredWrite`s until their next other statement (see there). */
export function withDeferredWrites(dialect: Dialect): Dialect {
  return {
    createAdapter: () => dialect.createAdapter(),
    createDriver: () => new DeferringDriver(dialect.createDriver()),
    createQueryCompiler: () => dialect.createQueryCompiler(),
    createIntrospector: (db) => dialect.createIntrospector(db),
  };
}

type Compile = Parameters<NonNullable<Driver['savepoint']>>[2];

function savepoints(driver: Driver): Driver {
  if (!driver.savepoint || !driver.rollbackToSavepoint || !driver.releaseSavepoint) throw new Error('this dialect has no savepoints');
  return driver;
}

class DeferringDriver implements Driver {
  private readonly wrapped = new WeakMap<DatabaseConnection, DeferringConnection>();

  constructor(private readonly inner: Driver) {}

  init(): Promise<void> {
    return this.inner.init();
  }

  async acquireConnection(): Promise<DatabaseConnection> {
    const connection = await this.inner.acquireConnection();
    let deferring = this.wrapped.get(connection);
    if (!deferring) this.wrapped.set(connection, (deferring = new DeferringConnection(connection)));
    return deferring;
  }

  async beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    const deferring = connection as DeferringConnection;
    await this.inner.beginTransaction(deferring.inner, settings);
    deferring.inTransaction = true;
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    const deferring = connection as DeferringConnection;
    await deferring.flush();
    deferring.ended();
    await this.inner.commitTransaction(deferring.inner);
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    const deferring = connection as DeferringConnection;
    deferring.discard();
    await this.inner.rollbackTransaction(deferring.inner);
  }

  // Savepoints go through the deferring connection, so the writes before one are sent before it.
  async savepoint(connection: DatabaseConnection, name: string, compile: Compile): Promise<void> {
    await savepoints(this.inner).savepoint!(connection, name, compile);
  }

  async rollbackToSavepoint(connection: DatabaseConnection, name: string, compile: Compile): Promise<void> {
    await savepoints(this.inner).rollbackToSavepoint!(connection, name, compile);
  }

  async releaseSavepoint(connection: DatabaseConnection, name: string, compile: Compile): Promise<void> {
    await savepoints(this.inner).releaseSavepoint!(connection, name, compile);
  }

  async releaseConnection(connection: DatabaseConnection): Promise<void> {
    const deferring = connection as DeferringConnection;
    deferring.discard();
    await this.inner.releaseConnection(deferring.inner);
  }

  destroy(): Promise<void> {
    return this.inner.destroy();
  }
}

const NO_ROWS: QueryResult<never> = Object.freeze({ rows: Object.freeze([]) as unknown as never[] });

class DeferringConnection implements DatabaseConnection {
  inTransaction = false;
  private waiting: CompiledQuery[] = [];
  /**
   * After `sendWaitingWrites`, until the transaction ends: the last statement handed to the
   * connection. Each later one goes once it is answered, and fails with its error if it fails.
   */
  private sent: Promise<unknown> | null = null;

  constructor(readonly inner: DatabaseConnection) {}

  // Not async: a statement with no writes waiting (most of them) goes straight through, with no
  // promise of its own on the way.
  executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    if (this.inTransaction && deferrable.has(query)) {
      this.waiting.push(query);
      return Promise.resolve(NO_ROWS);
    }
    if (this.inTransaction && readsAhead.has(query)) {
      // Chained as an early send is, so that no later statement is handed over while it is out.
      return this.afterSent(() => this.inner.executeQuery<R>(query));
    }
    const early = earlySends.get(query);
    if (early && this.inTransaction) {
      const writes = this.takeWaiting();
      early.answered = this.afterSent(() => this.send(writes));
      return Promise.resolve(NO_ROWS);
    }
    if (this.sent) {
      const writes = this.takeWaiting();
      return this.afterSent(() => this.send(writes).then(() => this.inner.executeQuery<R>(query)));
    }
    if (this.waiting.length === 0) return this.inner.executeQuery<R>(query);
    return this.flush().then(() => this.inner.executeQuery<R>(query));
  }

  async *streamQuery<R>(query: CompiledQuery, chunkSize?: number): AsyncIterableIterator<QueryResult<R>> {
    await this.flush();
    yield* this.inner.streamQuery<R>(query, chunkSize);
  }

  /** Sends the waiting writes, as one statement when there are several (after what `sendWaitingWrites` sent). */
  async flush(): Promise<void> {
    const writes = this.takeWaiting();
    await (this.sent ? this.afterSent(() => this.send(writes)) : this.send(writes));
  }

  /** Forgets the waiting writes: their transaction ends without them (a rollback). */
  discard(): void {
    this.waiting = [];
    this.sent = null;
    this.inTransaction = false;
  }

  /** The transaction is over: what was sent early was answered with it. */
  ended(): void {
    this.sent = null;
    this.inTransaction = false;
  }

  private takeWaiting(): CompiledQuery[] {
    const writes = this.waiting;
    this.waiting = [];
    return writes;
  }

  /** The writes as one statement, but a copy (`copyFromStdin`) is one of its own: sent first, since none of them sees another. */
  private async send(writes: readonly CompiledQuery[]): Promise<void> {
    const isCopy = (w: CompiledQuery) => copyDataOf(w.sql, w.parameters) !== undefined;
    for (const copy of writes.filter(isCopy)) await this.inner.executeQuery(copy);
    const statements = writes.filter((w) => !isCopy(w));
    if (statements.length > 0) await this.inner.executeQuery(statements.length === 1 ? statements[0]! : combined(statements));
  }

  /** `next` once everything sent before it is answered; in its turn, the last thing sent. */
  private afterSent<T>(next: () => Promise<T>): Promise<T> {
    const answer = (this.sent ?? Promise.resolve()).then(next);
    answer.catch(() => undefined); // whoever awaits it hears of its failure, as does every statement after it
    this.sent = answer;
    return answer;
  }
}

/** How many different combinations' texts are kept (the projections have a handful). */
const MAX_TEXTS = 256;
interface TextNode {
  text?: string;
  next: Map<string, TextNode>;
}
const texts: TextNode = { next: new Map() };
let textCount = 0;

/**
 * The writes as one statement: `with w1 as (<first>), w2 as (<second, its $n renumbered>) select null`.
 * PostgreSQL runs every data-modifying `with` clause exactly once and to its end, read or not.
 */
function combined(writes: readonly CompiledQuery[]): CompiledQuery {
  return CompiledQuery.raw(
    combinedText(writes),
    writes.flatMap((w) => w.parameters),
  );
}

function combinedText(writes: readonly CompiledQuery[]): string {
  let node = texts;
  for (const write of writes) {
    let next = node.next.get(write.sql);
    if (!next) {
      if (textCount >= MAX_TEXTS) return buildText(writes);
      node.next.set(write.sql, (next = { next: new Map() }));
    }
    node = next;
  }
  if (node.text === undefined) {
    node.text = buildText(writes);
    textCount++;
  }
  return node.text;
}

function buildText(writes: readonly CompiledQuery[]): string {
  let offset = 0;
  const clauses = writes.map((write, i) => {
    if (/^\s*with\b/i.test(write.sql)) throw new Error(`a deferred write has a with clause of its own, which cannot be nested: ${write.sql.slice(0, 80)}`);
    const shift = offset;
    offset += write.parameters.length;
    const text = shift === 0 ? write.sql : write.sql.replace(/\$(\d+)/g, (_, n: string) => `$${Number(n) + shift}`);
    return `deferred_${i + 1} as (${text})`;
  });
  return `with ${clauses.join(',\n')}\nselect null`;
}

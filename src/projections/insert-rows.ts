import { type CompiledQuery, type RawBuilder, sql, type Transaction } from 'kysely';
import { COPY_NULL, copyField, copyFromStdin } from '../db/copy-from-stdin.js';
import { deferredWrite } from '../db/deferred-writes.js';
import { compiledOnce } from '../db/precompiled-query.js';
import type { Database } from '../db/schema.js';

/**
 * From how many rows an insert without a conflict clause or constant columns goes as a copy
 * (`copyFromStdin`): a rebuild's pages and a long catch-up. Below it the insert stays one
 * statement that a deferred write can join (a copy cannot), so a live batch's writes still cost it
 * one round trip; from here on, the copy's lower cost per row outweighs its own round trips.
 */
export const COPY_AT_ROWS = 1_000;

/** A column of a row-set insert and its SQL type (both constants of the code, never input). */
export type Columns = Record<string, string>;

/** What a row-set insert adds to its rows: constant columns (`also`) and a conflict clause, both constants of the code. */
export interface RowSetInsertOptions {
  onConflict?: RawBuilder<unknown>;
  also?: Record<string, RawBuilder<unknown>>;
  /**
   * The insert may wait for the transaction's next statement and travel with it
   * (`deferredWrite`): only where no later deferred write of the batch reads or changes its rows.
   */
  deferred?: boolean;
}

/**
 * Inserts any number of rows in ONE statement with one parameter per column: each column travels
 * as one PostgreSQL array literal that `unnest` spreads back into rows, so a batch of 10,000 rows
 * neither meets PostgreSQL's 65,535-parameter limit nor costs a statement per row. Rows are
 * inserted in array order (`with ordinality`), so identity `seq` columns number them as
 * one-by-one inserts would.
 *
 * Columns rather than one JSON document of rows (`jsonb_to_recordset`, before session 7): the
 * server parses a third of the bytes (no key repeated per row) and no jsonb of the whole batch,
 * about 2.5 times less of its time per row (docs/performance.md, "Projection rebuild (session 7)").
 *
 * The statement is built and compiled by kysely once, on the first insert, and only the column
 * arrays change after that: the projections insert on every batch, and building the query each
 * time cost them more than writing its arrays (docs/performance.md). The table name is unqualified,
 * so a rebuild's `search_path` still sends the rows to its copies.
 *
 * A value becomes its column's text: null and undefined are SQL NULL (also in `jsonb` columns:
 * give JSON values that must be stored as the JSON literal `null` through `also`), a `json`/`jsonb`
 * column's value is its JSON, a Date its ISO instant, another object its JSON, the rest `String`.
 *
 * From `COPY_AT_ROWS` rows, an insert with neither a conflict clause nor constant columns sends
 * them with `COPY … FROM STDIN` instead, which costs PostgreSQL about half as much per row.
 *
 * `prepare` builds the statement without sending it, for a caller that wants its JavaScript done
 * before it waits on the database (the customers projector, so that a rebuild builds a page while
 * PostgreSQL writes the one before).
 *
 * @example
 * const insertLedger = rowSetInsert('ledger_entries', LEDGER_COLUMNS);
 * await insertLedger(trx, rows);
 */
export function rowSetInsert(table: string, columns: Columns, options: RowSetInsertOptions = {}) {
  let withArrays: ReturnType<typeof compiledOnce<string>> | undefined;
  const names = Object.keys(columns);
  // A copy adds rows and nothing else: no conflict clause, no constant columns.
  const copies = !options.onConflict && !options.also;
  /** The insert built, not yet sent: a function that sends it (nothing to send for no rows). */
  const prepare = (trx: Transaction<Database>, rows: readonly Record<string, unknown>[]): (() => Promise<void>) => {
    if (rows.length === 0) return async () => {};
    let query: CompiledQuery;
    if (copies && rows.length >= COPY_AT_ROWS) {
      query = copyFromStdin(table, names, copyText(rows, names, columns));
    } else {
      withArrays ??= compiledOnce<string>((column) => statement(table, columns, options, column).compile(trx));
      query = withArrays((column) => arrayLiteral(rows, column, columns[column]!));
    }
    return sender(trx, query, options.deferred);
  };
  const insert = (trx: Transaction<Database>, rows: readonly Record<string, unknown>[]): Promise<void> => prepare(trx, rows)();
  return Object.assign(insert, { prepare });
}

/**
 * Updates rows by key from column arrays, in ONE statement: `rowSetInsert`'s arrays, for rows that
 * exist (an upsert of rows that are mostly new costs PostgreSQL a third more per row than a plain
 * insert: docs/performance.md). `key` names the columns that find each row; the others are set.
 * Deferred, as `rowSetInsert` can be, under the same condition.
 */
export function rowSetUpdate(table: string, key: readonly string[], columns: Columns, options: { deferred?: boolean } = {}) {
  let withArrays: ReturnType<typeof compiledOnce<string>> | undefined;
  return {
    prepare(trx: Transaction<Database>, rows: readonly Record<string, unknown>[]): () => Promise<void> {
      if (rows.length === 0) return async () => {};
      withArrays ??= compiledOnce<string>((column) => updateStatement(table, key, columns, column).compile(trx));
      return sender(trx, withArrays((column) => arrayLiteral(rows, column, columns[column]!)), options.deferred);
    },
  };
}

/** A function that sends `query` in `trx`, as a deferred write when asked (see `deferredWrite`). */
function sender(trx: Transaction<Database>, query: CompiledQuery, deferred: boolean | undefined): () => Promise<void> {
  return async () => {
    await trx.executeQuery(deferred ? deferredWrite(query) : query);
  };
}

function updateStatement(table: string, key: readonly string[], columns: Columns, column: (name: string) => unknown) {
  const names = Object.keys(columns);
  const set = sql.join(names.filter((n) => !key.includes(n)).map((n) => sql`${sql.id(n)} = ${valueOf(n, columns[n]!)}`));
  const matches = sql.join(key.map((n) => sql`t.${sql.id(n)} = x.${sql.id(n)}`), sql` and `);
  return sql`update ${sql.table(table)} as t set ${set}
    from unnest(${columnArrays(names, columns, column)}) as x(${sql.raw(names.join(', '))})
    where ${matches}`;
}

/** A column of `x` (the unnested arrays) as its SQL type: JSON travels as text and is cast here. */
const valueOf = (name: string, type: string) => (isJson(type) ? sql`${sql.ref(`x.${name}`)}::${sql.raw(type)}` : sql.ref(`x.${name}`));

/**
 * Each column's array in the place `column(name)` gives it, cast to an array of its type. JSON
 * travels as text[] and is cast element by element: PostgreSQL 15 reads a jsonb[] literal some 20
 * times slower (about 180 ms for 10,000 `{}`, against 9 ms as text cast one by one).
 */
const columnArrays = (names: readonly string[], columns: Columns, column: (name: string) => unknown) =>
  sql.join(names.map((n) => sql`${column(n)}::${sql.raw(isJson(columns[n]!) ? 'text[]' : `${columns[n]}[]`)}`));

/** The insert, with each column's array in the place `column(name)` gives it. */
function statement(table: string, columns: Columns, options: RowSetInsertOptions, column: (name: string) => unknown) {
  const names = Object.keys(columns);
  const extra = Object.entries(options.also ?? {});
  const target = sql.raw([...names, ...extra.map(([n]) => n)].join(', '));
  const values = sql.join([...names.map((n) => valueOf(n, columns[n]!)), ...extra.map(([, v]) => v)]);
  const arrays = columnArrays(names, columns, column);
  return sql`insert into ${sql.table(table)} (${target})
    select ${values} from unnest(${arrays}) with ordinality as x(${sql.raw(names.join(', '))}, insert_rows_order)
    order by x.insert_rows_order ${options.onConflict ?? sql``}`;
}

/**
 * One column of `rows` as a one-dimensional array literal: `{"a","b\"c",NULL,12}`. Joined from an
 * array of its elements: the result is one flat string from the start (in the large-object space
 * for a big batch), where appending built a rope of a node per element that lived, and was copied
 * by every young-generation collection, until the statement was written out.
 */
function arrayLiteral(rows: readonly Record<string, unknown>[], column: string, type: string): string {
  const json = isJson(type);
  const elements = new Array<string>(rows.length);
  for (let i = 0; i < rows.length; i++) elements[i] = element(rows[i]![column], json, ARRAY);
  return `{${elements.join(',')}}`;
}

/** `rows` in COPY's text format: a line per row, its columns' fields separated by tabs (joined, for the reason `arrayLiteral` gives). */
function copyText(rows: readonly Record<string, unknown>[], names: readonly string[], columns: Columns): string {
  const json = names.map((n) => isJson(columns[n]!));
  const lines = new Array<string>(rows.length + 1);
  const fields = new Array<string>(names.length);
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i]!;
    for (let c = 0; c < names.length; c++) fields[c] = element(row[names[c]!], json[c]!, COPY);
    lines[i] = fields.join('\t');
  }
  lines[rows.length] = '';
  return lines.join('\n');
}

const isJson = (type: string) => type === 'jsonb' || type === 'json';

/** How a format writes text that may hold its special characters, and SQL NULL. */
interface TextFormat {
  text: (text: string) => string;
  null: string;
}

const ARRAY: TextFormat = { text: quoted, null: 'NULL' };
const COPY: TextFormat = { text: copyField, null: COPY_NULL };

/** A value as an element of `format`: its text, escaped by the format where it may hold anything, bare where it holds nothing the format reads specially. */
function element(value: unknown, json: boolean, format: TextFormat): string {
  if (value === null || value === undefined) return format.null;
  if (json) return format.text(JSON.stringify(value));
  switch (typeof value) {
    case 'string':
      return format.text(value);
    case 'number':
    case 'bigint':
    case 'boolean':
      return String(value);
    default:
      return value instanceof Date ? value.toISOString() : format.text(JSON.stringify(value));
  }
}

const QUOTE = 34;
const BACKSLASH = 92;

/** Text in double quotes, its `"` and `\` escaped with `\` (scanned by character code: most text has neither). */
function quoted(text: string): string {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE || c === BACKSLASH) return `"${text.replace(/["\\]/g, '\\$&')}"`;
  }
  return `"${text}"`;
}

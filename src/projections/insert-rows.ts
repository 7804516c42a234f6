import { type RawBuilder, sql, type Transaction } from 'kysely';
import type { Database } from '../db/schema.js';

/** A column of a row-set insert and its SQL type (both constants of the code, never input). */
export type Columns = Record<string, string>;

/**
 * Inserts any number of rows in ONE statement with ONE parameter: the rows travel as a JSON array
 * that `jsonb_to_recordset` spreads into typed columns, so a batch of 10,000 rows neither meets
 * PostgreSQL's 65,535-parameter limit nor costs a statement per row. Rows are inserted in array
 * order (`with ordinality`), so identity `seq` columns number them as one-by-one inserts would.
 *
 * A JSON `null` arrives as SQL NULL, also in `jsonb` columns: give JSON values that must be stored
 * as the JSON literal `null` through `also`.
 */
export async function insertRows(
  trx: Transaction<Database>,
  table: string,
  columns: Columns,
  rows: readonly Record<string, unknown>[],
  options: { onConflict?: RawBuilder<unknown>; also?: Record<string, RawBuilder<unknown>> } = {},
): Promise<void> {
  if (rows.length === 0) return;
  const names = Object.keys(columns);
  const typed = names.map((n) => `${n} ${columns[n]}`).join(', ');
  const extra = Object.entries(options.also ?? {});
  const target = sql.raw([...names, ...extra.map(([n]) => n)].join(', '));
  const values = sql.join([...names.map((n) => sql.ref(`x.${n}`)), ...extra.map(([, v]) => v)]);
  await sql`insert into ${sql.table(table)} (${target})
    select ${values} from rows from (jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) as (${sql.raw(typed)})) with ordinality as x(${sql.raw(names.join(', '))}, n)
    order by x.n ${options.onConflict ?? sql``}`.execute(trx);
}

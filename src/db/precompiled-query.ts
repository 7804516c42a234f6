import type { Compilable, Kysely } from 'kysely';
import type { Database } from './schema.js';

const MARK = '\u0000precompiled:';

/**
 * A query built and compiled by kysely once, then run with new values: kysely otherwise builds
 * and compiles a query on every call (about a tenth of the service's CPU on the hot paths in the
 * profile of docs/performance.md). `build` places the values with `param(name)`; any other value
 * in it is a constant of the query.
 *
 * @example
 * const byId = precompiled(db, (param) => db.selectFrom('tiers').selectAll().where('id', '=', param('id')));
 * const rows = await byId({ id });
 */
export function precompiled<Row, Name extends string = string, DB = Database>(
  db: Kysely<DB>,
  build: (param: (name: Name) => any) => Compilable<Row>,
): (values: Record<Name, unknown>) => Promise<Row[]> {
  const compiled = build((name) => `${MARK}${name}`).compile();
  const slots = compiled.parameters.map((p) => (typeof p === 'string' && p.startsWith(MARK) ? (p.slice(MARK.length) as Name) : undefined));
  return async (values) => {
    const parameters = compiled.parameters.map((p, i) => (slots[i] === undefined ? p : values[slots[i]!]));
    return (await db.executeQuery<Row>({ ...compiled, parameters })).rows;
  };
}

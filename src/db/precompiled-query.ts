import type { CompiledQuery, Compilable, Kysely } from 'kysely';
import type { Database } from './schema.js';

/** Stands in for a value while a query is compiled (a parameter no caller sends: it holds a NUL). */
const MARK = '\u0000precompiled:';

/**
 * A query compiled once with named places for its values (`param(name)` in `compile`); the
 * function it answers gives that query with each place filled by `valueOf(name)`. Any other value
 * in the query is a constant of it.
 */
export function compiledOnce<Name extends string>(compile: (param: (name: Name) => any) => CompiledQuery) {
  const compiled = compile((name) => `${MARK}${name}`);
  const slots = compiled.parameters.map((p) => (typeof p === 'string' && p.startsWith(MARK) ? (p.slice(MARK.length) as Name) : undefined));
  return (valueOf: (name: Name) => unknown): CompiledQuery => ({
    ...compiled,
    parameters: compiled.parameters.map((p, i) => (slots[i] === undefined ? p : valueOf(slots[i]!))),
  });
}

/**
 * A query built and compiled by kysely once, then run with new values: kysely otherwise builds
 * and compiles a query on every call (about a tenth of the service's CPU on the hot paths in the
 * profile of docs/performance.md). `build` places the values with `param(name)`.
 *
 * @example
 * const byId = precompiled(db, (param) => db.selectFrom('tiers').selectAll().where('id', '=', param('id')));
 * const rows = await byId({ id });
 */
export function precompiled<Row, Name extends string = string, DB = Database>(
  db: Kysely<DB>,
  build: (param: (name: Name) => any) => Compilable<Row>,
): (values: Record<Name, unknown>) => Promise<Row[]> {
  const withValues = compiledOnce<Name>((param) => build(param).compile());
  return async (values) => (await db.executeQuery<Row>(withValues((name) => values[name]))).rows;
}

import { CompiledQuery } from 'kysely';

/**
 * Rows loaded with `COPY … FROM STDIN` in PostgreSQL's text format, as a kysely query: the
 * statement, with the rows as its one parameter. Both connections run it as a copy rather than a
 * query (`copyDataOf`): the server's (src/db/query-deadline.ts) streams the rows after the
 * statement, PGlite's (src/db/pglite-dialect.ts) hands them over as a blob.
 *
 * A copy costs PostgreSQL about half of what an `insert … select from unnest(…)` of the same rows
 * does (no arrays to parse and spread, and its heap inserts go a page at a time), but it is a
 * statement of its own, never part of another: for big row sets (docs/performance.md).
 *
 * `table` is unqualified, so a rebuild's `search_path` sends the rows to its copies; `table` and
 * `columns` are constants of the code, never input.
 */
export function copyFromStdin(table: string, columns: readonly string[], rows: string): CompiledQuery {
  return CompiledQuery.raw(`copy "${table}" (${columns.join(', ')}) from stdin`, [rows]);
}

/** The rows of a `copyFromStdin` statement, or undefined for any other statement. */
export function copyDataOf(sql: string, parameters: readonly unknown[]): string | undefined {
  const rows = parameters[0];
  return parameters.length === 1 && typeof rows === 'string' && sql.startsWith('copy "') && sql.endsWith(') from stdin') ? rows : undefined;
}

const TAB = 9;
const NEWLINE = 10;
const RETURN = 13;
const BACKSLASH = 92;

/** A value as a field of the text format: `\`, tab, newline and carriage return escaped with `\` (scanned by character code: most text has none). */
export function copyField(text: string): string {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === BACKSLASH || c === TAB || c === NEWLINE || c === RETURN) return text.replace(/[\\\t\n\r]/g, escape);
  }
  return text;
}

const ESCAPES: Record<string, string> = { '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' };
const escape = (c: string) => ESCAPES[c]!;

/** SQL NULL in the text format. */
export const COPY_NULL = '\\N';

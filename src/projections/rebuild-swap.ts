import { type Kysely, sql, type Transaction } from 'kysely';
import type { Database } from '../db/schema.js';

/**
 * How a rebuild puts its copies in place of the live tables (`swap` in rebuild.ts).
 *
 * - `renamed`: the live tables are dropped and the copies take their names, schema, indexes'
 *   and constraints' names, owner, grants, comment and storage options; every view on them (the
 *   analytics views, analysts' own) is pointed at the new table with `create or replace view`,
 *   so it keeps its identity, its grants and the views built on it. No row is copied, and the
 *   live tables end without the dead rows a copy would leave.
 * - `rows`: the live tables keep their identity; their rows are deleted and the copies' inserted
 *   in one statement per table. Used when anything but a view depends on a live table (a
 *   materialized view, a foreign key, a trigger, a policy, a publication, column grants…), when
 *   a view is not ours to replace, or when readers held a table past `RENAME_LOCK_TIMEOUT`.
 */
export type SwapMethod = 'renamed' | 'rows';

/**
 * How long the renaming swap waits for the readers of a live table to finish: it needs the table
 * to itself for a moment, and readers that come meanwhile queue behind it. After that it copies
 * rows instead, which never makes a reader wait.
 */
export const RENAME_LOCK_TIMEOUT = '500ms';

/** What can stop a renaming swap: a reason for the log, or null when nothing does. */
export async function renameBlocker(db: Kysely<Database> | Transaction<Database>, live: string, tables: readonly string[]): Promise<string | null> {
  const { rows } = await sql<{ reason: string; ok: boolean }>`
    with live as (
      select c.oid, c.relname from pg_class c
       where ${isOneOf(live, tables)})
    select case when v.oid is not null then case v.relkind when 'v' then 'view ' when 'm' then 'materialized view ' else '' end || v.oid::regclass::text
                else pg_describe_object(d.classid, d.objid, d.objsubid) end || ' depends on ' || live.relname as reason,
           case d.classid
             when 'pg_rewrite'::regclass then v.relkind = 'v' and v.oid <> live.oid and pg_has_role(v.relowner, 'USAGE')
             when 'pg_class'::regclass then o.relkind in ('i', 'S', 't')
             when 'pg_constraint'::regclass then k.conrelid = live.oid
             when 'pg_type'::regclass then d.deptype = 'i'
             when 'pg_attrdef'::regclass then true
             else false
           end as ok
      from live
      join pg_depend d on d.refclassid = 'pg_class'::regclass and d.refobjid = live.oid
      left join pg_rewrite r on d.classid = 'pg_rewrite'::regclass and r.oid = d.objid
      left join pg_class v on v.oid = r.ev_class
      left join pg_class o on d.classid = 'pg_class'::regclass and o.oid = d.objid
      left join pg_constraint k on d.classid = 'pg_constraint'::regclass and k.oid = d.objid
    union all
    select 'the replica identity, row security, column grants or owner of ' || live.relname, false
      from live join pg_class c on c.oid = live.oid
     where c.relreplident <> 'd' or c.relrowsecurity or c.relkind <> 'r' or not pg_has_role(c.relowner, 'USAGE')
        or exists (select 1 from pg_attribute a where a.attrelid = live.oid and a.attacl is not null)`.execute(db);
  const blocking = rows.find((row) => !row.ok);
  if (!blocking) return null;
  return blocking.reason;
}

/**
 * Gives each copy every index and unique key of its live table under the live one's name (the
 * replay's copies have only the keys its lookups need, under the live names) and its statistics,
 * so that once renamed it serves reads and plans as the live table did. Done before the swap,
 * outside its locks.
 */
export async function completeCopies(db: Kysely<Database>, live: string, scratch: string, tables: readonly string[]): Promise<void> {
  for (const table of tables) {
    const { rows } = await sql<{ name: string; constraint_def: string | null; index_def: string }>`
      select quote_ident(i.relname) as name, pg_get_indexdef(i.oid) as index_def,
             (select pg_get_constraintdef(k.oid) from pg_constraint k where k.conindid = i.oid and k.conrelid = x.indrelid and k.contype in ('p', 'u', 'x')) as constraint_def
        from pg_index x join pg_class i on i.oid = x.indexrelid
       where x.indrelid = ${qualified(live, table)}::regclass
         and not exists (select 1 from pg_class c where c.relnamespace = ${schemaOid(scratch)} and c.relname = i.relname)
       order by i.relname`.execute(db);
    for (const { name, constraint_def, index_def } of rows) {
      if (constraint_def) {
        await sql`alter table ${sql.id(scratch, table)} add constraint ${sql.raw(name)} ${sql.raw(constraint_def)}`.execute(db);
      } else {
        // "CREATE [UNIQUE] INDEX name ON [ONLY] schema.table USING …": the same index, on the copy.
        const using = index_def.indexOf(' USING ');
        const unique = /^CREATE UNIQUE /.test(index_def) ? sql`unique` : sql``;
        await sql`create ${unique} index ${sql.raw(name)} on ${sql.id(scratch, table)} ${sql.raw(index_def.slice(using))}`.execute(db);
      }
    }
    await sql`analyze ${sql.id(scratch, table)}`.execute(db);
  }
}

/**
 * The renaming swap, in the swap's transaction (its advisory locks taken, the copies complete):
 * null once renamed; what stopped it, with nothing changed, when something found under the lock
 * does (`renameBlocker`), and the caller then copies rows. Waits at most `RENAME_LOCK_TIMEOUT`
 * for each lock.
 */
export async function swapByRename(trx: Transaction<Database>, live: string, scratch: string, tables: readonly string[]): Promise<string | null> {
  // For every lock of the transaction: replacing a view waits for its readers too.
  await sql`select set_config('lock_timeout', ${RENAME_LOCK_TIMEOUT}, true)`.execute(trx);
  for (const table of tables) await sql`lock table ${sql.id(live, table)} in access exclusive mode`.execute(trx);
  const blocker = await renameBlocker(trx, live, tables);
  if (blocker) return blocker;
  const views = await viewsOn(trx, live, tables);
  const carried = await carriedProperties(trx, live, tables);

  const retired = `${scratch}_retired`;
  await sql`create schema ${sql.id(retired)}`.execute(trx);
  for (const table of tables) await sql`alter table ${sql.id(live, table)} set schema ${sql.id(retired)}`.execute(trx);
  for (const table of tables) await sql`alter table ${sql.id(scratch, table)} set schema ${sql.id(live)}`.execute(trx);
  // Each view's query is read again with the new tables under the same names; the view keeps its identity.
  for (const view of views) await sql`create or replace view ${sql.raw(view.name)} ${sql.raw(view.options)} as ${sql.raw(view.definition)}`.execute(trx);
  for (const statement of carried) await sql.raw(statement).execute(trx);
  // Restrict: anything that still points at an old table (found by no check above) fails the swap, and it copies rows instead.
  for (const table of tables) await sql`drop table ${sql.id(retired, table)} restrict`.execute(trx);
  await sql`drop schema ${sql.id(retired)} restrict`.execute(trx);
  return null;
}

/**
 * An error of a renaming swap after which copying rows still works — a lock not had in time, a
 * view not ours, something depending on an old table — as what stopped it; null for any other.
 */
export function renameRefusal(error: unknown): string | null {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  if (code === '55P03') return `a query held a live table past ${RENAME_LOCK_TIMEOUT}`;
  if (code === '42501' || code === '2BP01' || code === '42P16') return String(message);
  return null;
}

/** The rows swap: the live tables keep their identity and get the copies' rows; identity sequences continue after them. */
export async function swapRows(trx: Transaction<Database>, live: string, scratch: string, tables: readonly string[]): Promise<void> {
  // Exclusive, not access exclusive: writers wait (the live runner's batches skip the swap anyway), readers go on.
  for (const table of tables) await sql`lock table ${sql.id(live, table)} in exclusive mode`.execute(trx);
  for (const table of tables) {
    await sql`delete from ${sql.id(live, table)}`.execute(trx);
    await sql`insert into ${sql.id(live, table)} overriding system value select * from ${sql.id(scratch, table)}`.execute(trx);
    const identities = await sql<{ column_name: string }>`
      select column_name from information_schema.columns
      where table_schema = ${live} and table_name = ${table} and is_identity = 'YES'`.execute(trx);
    for (const { column_name: column } of identities.rows) {
      await sql`select setval(pg_get_serial_sequence(${qualified(live, table)}, ${column}),
        coalesce((select max(${sql.ref(column)}) from ${sql.id(live, table)}), 0) + 1, false)`.execute(trx);
    }
  }
}

/**
 * The views that read the live tables directly, with their queries as the catalog prints them
 * under a `search_path` of `pg_catalog` alone: every table in them named with its schema, so the
 * query read again finds the copies once they have the live names.
 */
async function viewsOn(trx: Transaction<Database>, live: string, tables: readonly string[]): Promise<Array<{ name: string; options: string; definition: string }>> {
  const { rows: path } = await sql<{ path: string }>`select current_setting('search_path') as path`.execute(trx);
  await sql`select set_config('search_path', 'pg_catalog', true)`.execute(trx);
  const { rows } = await sql<{ name: string; options: string; definition: string }>`
    select quote_ident(n.nspname) || '.' || quote_ident(v.relname) as name,
           coalesce('with (' || ${optionList(sql.ref('v.reloptions'))} || ')', '') as options,
           pg_get_viewdef(v.oid) as definition
      from pg_class v join pg_namespace n on n.oid = v.relnamespace
     where v.relkind = 'v' and v.oid in (
             select r.ev_class from pg_depend d join pg_rewrite r on r.oid = d.objid
              where d.classid = 'pg_rewrite'::regclass and d.refclassid = 'pg_class'::regclass
                and d.refobjid in (select c.oid from pg_class c where ${isOneOf(live, tables)}))
     order by v.oid`.execute(trx);
  await sql`select set_config('search_path', ${path[0]!.path}, true)`.execute(trx);
  return rows.map((row) => ({ ...row, definition: row.definition.replace(/;\s*$/, '') }));
}

/** What the live tables have that `create table … (like …)` does not copy: owner, grants, the table's comment, storage options; as statements for the copies once renamed. */
async function carriedProperties(trx: Transaction<Database>, live: string, tables: readonly string[]): Promise<string[]> {
  const { rows } = await sql<{ statement: string }>`
    with live as (
      select c.oid, c.relname, c.relowner, c.relacl, c.reloptions, quote_ident(${live}) || '.' || quote_ident(c.relname) as name
        from pg_class c where ${isOneOf(live, tables)})
    select 'alter table ' || name || ' owner to ' || quote_ident(pg_get_userbyid(relowner)) as statement from live where relowner <> (select oid from pg_roles where rolname = current_user)
    union all
    select 'grant ' || a.privilege_type || ' on ' || name || ' to ' || case a.grantee when 0 then 'public' else quote_ident(pg_get_userbyid(a.grantee)) end
           || case when a.is_grantable then ' with grant option' else '' end
      from live cross join lateral aclexplode(live.relacl) a
    union all
    select 'comment on table ' || name || ' is ' || quote_literal(obj_description(oid, 'pg_class')) from live where obj_description(oid, 'pg_class') is not null
    union all
    select 'alter table ' || name || ' set (' || ${optionList(sql.ref('reloptions'))} || ')'
      from live where reloptions is not null`.execute(trx);
  return rows.map((row) => row.statement);
}

const qualified = (schema: string, table: string) => `"${schema}"."${table}"`;

/** A schema's oid by its name as it is (a `::regnamespace` cast would read the name as SQL and fold its case). */
const schemaOid = (schema: string) => sql`(select oid from pg_namespace where nspname = ${schema})`;

/** The condition on `pg_class c` that picks the tables named in `schema`. */
const isOneOf = (schema: string, tables: readonly string[]) => sql`c.relnamespace = ${schemaOid(schema)} and c.relname = any(${tables as string[]}::text[])`;

/** A relation's storage options as SQL (`fillfactor = '90', …`), from its `reloptions` column; null for none. */
const optionList = (reloptions: ReturnType<typeof sql.ref>) =>
  sql`(select string_agg(quote_ident(o.option_name) || ' = ' || quote_literal(o.option_value), ', ') from pg_options_to_table(${reloptions}) o)`;

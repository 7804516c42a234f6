import { type Kysely, type RawBuilder, sql } from 'kysely';
import type { Database } from '../db/schema.js';

/** What `loyalty export` writes: one analytics view each (docs/read-models.md describes the columns). */
export const EXPORT_KINDS = ['customers', 'ledger', 'events'] as const;
export type ExportKind = (typeof EXPORT_KINDS)[number];

interface ExportSource {
  view: RawBuilder<unknown>;
  /** The columns, in order; numeric ones cast so every store answers numbers, not text. */
  columns: Record<string, RawBuilder<unknown>>;
  /** When a row happened: what `--from` / `--to` compare. */
  time: string;
}

const column = (name: string) => sql.ref(name);
const float = (name: string) => sql`${sql.ref(name)}::float8`;

const SOURCES: Record<ExportKind, ExportSource> = {
  customers: {
    view: sql.table('analytics.customers'),
    time: 'created_at',
    columns: Object.fromEntries(
      ['customer_id', 'business_id', 'email', 'phone', 'first_name', 'last_name', 'external_reference', 'points_balance', 'lifetime_earned',
        'lifetime_redeemed', 'tier_id', 'tier_name', 'tier_achieved_at', 'metadata', 'created_at', 'updated_at'].map((n) => [n, column(n)]),
    ),
  },
  ledger: {
    view: sql.table('analytics.points_ledger'),
    time: 'created_at',
    columns: {
      ...Object.fromEntries(['entry_id', 'business_id', 'customer_id', 'entry_type', 'amount', 'points_change', 'balance_after', 'base_amount'].map((n) => [n, column(n)])),
      multiplier: float('multiplier'),
      ...Object.fromEntries(['description', 'reference', 'metadata', 'created_at'].map((n) => [n, column(n)])),
    },
  },
  events: {
    view: sql.table('analytics.events'),
    time: 'recorded_at',
    columns: {
      ...Object.fromEntries(['event_id', 'business_id', 'customer_id', 'event_type', 'properties', 'reference', 'base_points'].map((n) => [n, column(n)])),
      multiplier: float('multiplier'),
      ...Object.fromEntries(['points_awarded', 'balance_after', 'recorded_at'].map((n) => [n, column(n)])),
    },
  },
};

export interface ExportRequest {
  businessId: string;
  /** Rows at or after this instant (inclusive). */
  from?: Date | undefined;
  /** Rows before this instant (exclusive), so consecutive windows never overlap. */
  to?: Date | undefined;
  /** Rows read per statement (default 2,000): what bounds the memory an export holds. */
  pageSize?: number;
}

/** The column names of an export, in the order its rows hold them. */
export const exportColumns = (kind: ExportKind): string[] => Object.keys(SOURCES[kind].columns);

function filtered(kind: ExportKind, request: ExportRequest, afterSeq: number | null) {
  const { time } = SOURCES[kind];
  const conditions = [sql`business_id = ${request.businessId}`];
  if (request.from) conditions.push(sql`${sql.ref(time)} >= ${request.from}`);
  if (request.to) conditions.push(sql`${sql.ref(time)} < ${request.to}`);
  if (afterSeq !== null) conditions.push(sql`seq > ${afterSeq}`);
  return sql.join(conditions, sql` and `);
}

/** How many rows `exportRows` will yield (for the progress bar). */
export async function countExportRows(db: Kysely<Database>, kind: ExportKind, request: ExportRequest): Promise<number> {
  const { rows } = await sql<{ n: number | string }>`select count(*) as n from ${SOURCES[kind].view} where ${filtered(kind, request, null)}`.execute(db);
  return Number(rows[0]?.n ?? 0);
}

/**
 * The rows of one export, oldest first, one page of `pageSize` at a time (keyset on the view's
 * `seq`, never OFFSET): memory stays that of one page however many rows there are. Each row is an
 * array of values in `exportColumns(kind)` order. Run it inside a repeatable-read transaction for
 * one consistent snapshot (`loyalty export` does).
 *
 * @example
 * for await (const page of exportRows(db, 'ledger', { businessId })) for (const row of page) write(row);
 */
export async function* exportRows(db: Kysely<Database>, kind: ExportKind, request: ExportRequest): AsyncGenerator<unknown[][]> {
  const source = SOURCES[kind];
  const select = sql.join(Object.entries(source.columns).map(([name, expression]) => sql`${expression} as ${sql.ref(name)}`));
  const pageSize = request.pageSize ?? 2_000;
  let afterSeq: number | null = null;
  for (;;) {
    const { rows } = await sql<Record<string, unknown> & { seq: number }>`
      select ${select}, seq from ${source.view} where ${filtered(kind, request, afterSeq)} order by seq limit ${pageSize}`.execute(db);
    if (rows.length === 0) return;
    const names = Object.keys(source.columns);
    yield rows.map((row) => names.map((name) => row[name]));
    if (rows.length < pageSize) return;
    afterSeq = Number(rows.at(-1)!.seq);
  }
}

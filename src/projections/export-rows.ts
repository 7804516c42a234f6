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

function filtered(kind: ExportKind, request: ExportRequest) {
  const { time } = SOURCES[kind];
  const conditions = [sql`business_id = ${request.businessId}`];
  if (request.from) conditions.push(sql`${sql.ref(time)} >= ${request.from}`);
  if (request.to) conditions.push(sql`${sql.ref(time)} < ${request.to}`);
  return sql.join(conditions, sql` and `);
}

/** How many rows `exportRows` will yield (for the progress bar). */
export async function countExportRows(db: Kysely<Database>, kind: ExportKind, request: ExportRequest): Promise<number> {
  const { rows } = await sql<{ n: number | string }>`select count(*) as n from ${SOURCES[kind].view} where ${filtered(kind, request)}`.execute(db);
  return Number(rows[0]?.n ?? 0);
}

/**
 * The rows of one export, oldest first (the view's `seq`), `pageSize` at a time from ONE query
 * through a cursor: one plan and one pass over the table however many pages (a query per page
 * would be planned again each time, and a plan on stale statistics, after a rebuild say, scanned
 * the whole table per page), and memory holds one page. Each row is an array of values in
 * `exportColumns(kind)` order. `db` must be a transaction (a cursor lives in one); a
 * repeatable-read one makes the export one consistent snapshot (`loyalty export` does).
 *
 * @example
 * for await (const page of exportRows(trx, 'ledger', { businessId })) for (const row of page) write(row);
 */
export async function* exportRows(db: Kysely<Database>, kind: ExportKind, request: ExportRequest): AsyncGenerator<unknown[][]> {
  const source = SOURCES[kind];
  const names = Object.keys(source.columns);
  const select = sql.join(Object.entries(source.columns).map(([name, expression]) => sql`${expression} as ${sql.ref(name)}`));
  const pageSize = Math.max(1, Math.floor(request.pageSize ?? 2_000));
  const cursor = sql.id(`loyalty_export_${kind}`);
  await sql`declare ${cursor} no scroll cursor for select ${select} from ${source.view} where ${filtered(kind, request)} order by seq`.execute(db);
  try {
    for (;;) {
      const { rows } = await sql<Record<string, unknown>>`fetch forward ${sql.raw(String(pageSize))} from ${cursor}`.execute(db);
      if (rows.length > 0) yield rows.map((row) => names.map((name) => row[name]));
      if (rows.length < pageSize) return;
    }
  } finally {
    await sql`close ${cursor}`.execute(db);
  }
}

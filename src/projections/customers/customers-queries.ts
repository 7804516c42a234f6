import { type Kysely, type RawBuilder, sql } from 'kysely';
import type { CustomerRow, Database, LedgerEntryRow, TierRow } from '../../db/schema.js';
import { customerScope, fetchPage, type PageRequest } from '../page.js';
import { precompiled } from '../../db/precompiled-query.js';
import { batched } from '../../db/batched.js';

/** How many of the newest balance changes a summary shows. */
export const RECENT_ACTIVITY = 10;

/** A customer with what its summary shows besides: the newest balance changes and the next tier up. */
export interface CustomerSummaryRow extends CustomerRow {
  recent_activity: Array<Pick<LedgerEntryRow, 'type' | 'amount' | 'description' | 'created_at'>>;
  /** The lowest tier above the one held (any tier when none is held); null at the top. */
  next_tier: Pick<TierRow, 'id' | 'name' | 'points_threshold'> | null;
  /**
   * Under rolling tier qualification (the business's `due_policies` row), the points credited
   * within the window ending at the summary's instant, as `qualifyingPoints` counts them; null
   * under lifetime qualification, where `lifetime_earned` counts.
   */
  qualifying_points: number | null;
}

type SummaryQueryRow = CustomerRow & { recent_activity: unknown; next_tier: unknown; qualifying_points: string | number | null };

/** Points credited within a rolling window ending at `at`: lots net of reversals, less negative adjusts (as the decider's `qualifyingPoints`). */
const qualifyingSince = (customerId: RawBuilder<unknown>, from: RawBuilder<unknown>, at: RawBuilder<unknown>) => sql`
    coalesce((select sum(amount - reversed) from lots where customer_id = ${customerId} and created_at > ${from} and created_at <= ${at}), 0)
  + coalesce((select sum(amount) from ledger_entries
               where customer_id = ${customerId} and type = 'adjust' and amount < 0 and created_at > ${from} and created_at <= ${at}), 0)`;

/**
 * The keys a batched read asks for, `k(business_id, customer_id[, extra], asked)`, `asked` being
 * each key's place in the batch (one customer asked twice is two keys).
 */
const askedKeys = (param: (name: string) => unknown, extraArray = sql``, extraColumn = sql``) =>
  sql`unnest(${param('businessIds')}::text[], ${param('customerIds')}::text[]${extraArray}) with ordinality as k(business_id, customer_id${extraColumn}, asked)`;

/** A batched read's rows, one per key in the order asked (undefined where no row answered it). */
function inAskedOrder<Row extends { asked: number }>(count: number, rows: Row[]): Array<Row | undefined> {
  const answers = new Array<Row | undefined>(count).fill(undefined);
  for (const row of rows) answers[row.asked - 1] = row;
  return answers;
}

const withoutAsked = <Row extends { asked: number }>({ asked: _, ...row }: Row): Omit<Row, 'asked'> => row;

/** json(b) values arrive parsed from node-postgres, as text from some drivers. */
const parsed = <T>(value: unknown): T => (typeof value === 'string' ? JSON.parse(value) : value) as T;

export interface CustomerFilters {
  email?: string | undefined;
  phone?: string | undefined;
  external_reference?: string | undefined;
  tier?: string | undefined;
}

export function customerQueries(db: Kysely<Database>) {
  const seqOf = (table: 'customers' | 'ledger_entries', scope: { business_id: string; customer_id?: string }) => async (id: string) => {
    let q = db.selectFrom(table).select('seq').where('id', '=', id).where('business_id', '=', scope.business_id);
    if (scope.customer_id) q = q.where('customer_id' as never, '=', scope.customer_id as never);
    return (await q.executeTakeFirst())?.seq;
  };

  // One statement for the summaries of every request that asked at once (see `batched`):
  // each customer with its recent activity, next tier and qualifying points at its request's instant.
  const summaries = batched(async (asked: Array<{ businessId: string; customerId: string; at: Date }>) => {
    const rows = (await summaryRows({
      businessIds: asked.map((a) => a.businessId),
      customerIds: asked.map((a) => a.customerId),
      ats: asked.map((a) => a.at),
    })) as Array<SummaryQueryRow & { asked: number }>;
    return inAskedOrder(asked.length, rows);
  });
  const summaryRows = precompiled(db, (param) => ({
    compile: () =>
      sql`select k.asked::int4 as asked, c.*,
        coalesce((
          select json_agg(json_build_object('type', a.type, 'amount', a.amount, 'description', a.description, 'created_at', a.created_at) order by a.seq desc)
          from (
            -- By customer only (c is the asking business's already): with business_id as well, a
            -- table without statistics yet was planned as a scan of the customer's whole ledger and
            -- a sort, not the index read backwards for 10 rows (docs/performance.md).
            select l.seq, l.type, l.amount, l.description, l.created_at from ledger_entries l
            where l.customer_id = c.id
            order by l.seq desc limit ${RECENT_ACTIVITY}
          ) a
        ), '[]'::json) as recent_activity,
        (
          select json_build_object('id', t.id, 'name', t.name, 'points_threshold', t.points_threshold) from tiers t
          where t.business_id = c.business_id
            and (c.tier ->> 'points_threshold' is null or t.points_threshold > (c.tier ->> 'points_threshold')::numeric)
          order by t.points_threshold limit 1
        ) as next_tier,
        (
          select ${qualifyingSince(sql`c.id`, sql`k.at - make_interval(secs => p.window_days * 86400)`, sql`k.at`)}
          from due_policies p
          where p.business_id = c.business_id and p.tier_mode = 'rolling' and p.window_days is not null
        ) as qualifying_points
      from customers c
      join ${askedKeys(param, sql`, ${param('ats')}::timestamptz[]`, sql`, at`)} on k.business_id = c.business_id and k.customer_id = c.id
      where c.id = any(${param('customerIds')}::text[])`.compile(db),
  }));

  const customers = batched(async (asked: Array<{ businessId: string; customerId: string }>) => {
    const rows = (await customerRows({ businessIds: asked.map((a) => a.businessId), customerIds: asked.map((a) => a.customerId) })) as Array<
      CustomerRow & { asked: number }
    >;
    return inAskedOrder(asked.length, rows).map((row) => row && withoutAsked(row));
  });
  const customerRows = precompiled(db, (param) => ({
    compile: () =>
      sql`select k.asked::int4 as asked, c.* from customers c
      join ${askedKeys(param)} on k.business_id = c.business_id and k.customer_id = c.id
      where c.id = any(${param('customerIds')}::text[])`.compile(db),
  }));

  return {
    /** The customer with its summary's recent activity, next tier and qualifying points at `at`, in one statement. */
    async summary(businessId: string, customerId: string, at: Date): Promise<CustomerSummaryRow | undefined> {
      const asked = await summaries({ businessId, customerId, at });
      if (!asked) return undefined;
      const row = withoutAsked(asked);
      const activity = parsed<Array<CustomerSummaryRow['recent_activity'][number] & { created_at: string }>>(row.recent_activity);
      return {
        ...row,
        recent_activity: activity.map((a) => ({ ...a, created_at: new Date(a.created_at) })),
        next_tier: parsed<CustomerSummaryRow['next_tier']>(row.next_tier),
        qualifying_points: row.qualifying_points === null ? null : Number(row.qualifying_points),
      };
    },

    /** How many customers the business has (`loyalty businesses set-plan` counts a free plan on from it). */
    async count(businessId: string): Promise<number> {
      const row = await db
        .selectFrom('customers')
        .select((eb) => eb.fn.countAll<string | number>().as('n'))
        .where('business_id', '=', businessId)
        .executeTakeFirstOrThrow();
      return Number(row.n);
    },

    /** One customer's row (read with the others asked for at the same time: see `batched`). */
    get(businessId: string, customerId: string): Promise<CustomerRow | undefined> {
      return customers({ businessId, customerId });
    },

    list(businessId: string, filters: CustomerFilters, page: PageRequest) {
      let q = db.selectFrom('customers').selectAll().where('business_id', '=', businessId);
      if (filters.email !== undefined) q = q.where('email_lower', '=', filters.email.toLowerCase());
      if (filters.phone !== undefined) q = q.where('phone', '=', filters.phone);
      if (filters.external_reference !== undefined) q = q.where('external_reference', '=', filters.external_reference);
      if (filters.tier !== undefined) q = q.where('tier_id', '=', filters.tier);
      return fetchPage(q, page, seqOf('customers', { business_id: businessId }));
    },

    ledger(businessId: string, customerId: string, page: PageRequest) {
      const scope = customerScope(db, businessId, customerId);
      const q = db.selectFrom('ledger_entries').selectAll().where(scope.rowOf('ledger_entries'));
      return fetchPage(q, page, seqOf('ledger_entries', { business_id: businessId, customer_id: customerId }), scope.around);
    },

    /**
     * Rolling tier qualification (CONTRACT.md §13): the points credited in the window of `windowDays`
     * that ends at `at` — each credit's lot net of its reversals, and negative adjusts.
     */

    /** The customer's lots, oldest first; only those with points left unless `all`. */
    lots(businessId: string, customerId: string, page: PageRequest, all: boolean) {
      const scope = customerScope(db, businessId, customerId);
      let q = db.selectFrom('lots').selectAll().where(scope.rowOf('lots'));
      if (!all) q = q.where('remaining', '>', 0);
      const cursorSeq = async (id: string) => {
        const row = await db.selectFrom('lots').select('seq').where('customer_id', '=', customerId).where('transaction_id', '=', id).executeTakeFirst();
        return row?.seq;
      };
      return fetchPage(q, page, cursorSeq, scope.around);
    },

    ledgerEntry(businessId: string, id: string): Promise<LedgerEntryRow | undefined> {
      return db.selectFrom('ledger_entries').selectAll().where('business_id', '=', businessId).where('id', '=', id).executeTakeFirst();
    },
  };
}

export type CustomerQueries = ReturnType<typeof customerQueries>;

import { type Kysely, sql } from 'kysely';
import type { Database } from '../../db/schema.js';

export interface DayFigures {
  date: string;
  issued: number;
  redeemed: number;
  expired: number;
}

export interface TierCount {
  tier_id: string | null;
  name: string | null;
  points_threshold: number | null;
  customers: number;
}

/**
 * The overview's figures. Days come from `daily_points` (one row per day with movement: the cost
 * is the range's length, not the history's); what stands now comes from the customers rows (one
 * grouped scan of the business's customers, whatever the number of events).
 */
export function statsQueries(db: Kysely<Database>) {
  return {
    /** Every day of `from..to` (inclusive, `YYYY-MM-DD`), zero where nothing moved. */
    async days(businessId: string, from: string, to: string): Promise<DayFigures[]> {
      const rows = await db
        .selectFrom('daily_points')
        .select([sql<string>`to_char(day, 'YYYY-MM-DD')`.as('date'), 'issued', 'redeemed', 'expired'])
        .where('business_id', '=', businessId)
        .where('day', '>=', from)
        .where('day', '<=', to)
        .execute();
      const byDate = new Map(rows.map((r) => [r.date, r]));
      const days: DayFigures[] = [];
      for (let day = new Date(`${from}T00:00:00Z`); day <= new Date(`${to}T00:00:00Z`); day.setUTCDate(day.getUTCDate() + 1)) {
        const date = day.toISOString().slice(0, 10);
        const row = byDate.get(date);
        days.push({ date, issued: Number(row?.issued ?? 0), redeemed: Number(row?.redeemed ?? 0), expired: Number(row?.expired ?? 0) });
      }
      return days;
    },

    /** Points outstanding (balances) and customers, now. */
    async standing(businessId: string): Promise<{ customers: number; outstanding: number }> {
      const row = await db
        .selectFrom('customers')
        .select([sql<string>`count(*)`.as('customers'), sql<string>`coalesce(sum(points_balance), 0)`.as('outstanding')])
        .where('business_id', '=', businessId)
        .executeTakeFirstOrThrow();
      return { customers: Number(row.customers), outstanding: Number(row.outstanding) };
    },

    /** Customers per tier now, by threshold; customers without a tier first (tier_id null). */
    async tiers(businessId: string): Promise<TierCount[]> {
      const rows = await sql<TierCount>`
        select t.id as tier_id, t.name, t.points_threshold, coalesce(c.customers, 0) as customers
        from tiers t
        left join (select tier_id, count(*) as customers from customers where business_id = ${businessId} and tier_id is not null group by tier_id) c
          on c.tier_id = t.id
        where t.business_id = ${businessId}
        union all
        select null, null, null, count(*) from customers where business_id = ${businessId} and tier_id is null
        order by points_threshold nulls first`.execute(db);
      return rows.rows.map((r) => ({ ...r, points_threshold: r.points_threshold === null ? null : Number(r.points_threshold), customers: Number(r.customers) }));
    },
  };
}

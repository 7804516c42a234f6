import type { Kysely } from 'kysely';
import type { Database, EventTypeRow, RecordedEventRow, RedemptionRow, RewardRow, TierRow } from '../../db/schema.js';
import { customerScope, fetchPage, type PageRequest } from '../page.js';

export function catalogQueries(db: Kysely<Database>) {
  const seqIn = (table: 'event_types' | 'rewards' | 'redemptions' | 'recorded_events', businessId: string) => async (id: string) =>
    (await db.selectFrom(table).select('seq').where('business_id', '=', businessId).where('id', '=', id).executeTakeFirst())?.seq;

  return {
    /** All tiers of a business from the lowest threshold (a business has few). */
    tiers(businessId: string): Promise<TierRow[]> {
      return db.selectFrom('tiers').selectAll().where('business_id', '=', businessId).orderBy('points_threshold').execute();
    },
    tier(businessId: string, id: string): Promise<TierRow | undefined> {
      return db.selectFrom('tiers').selectAll().where('business_id', '=', businessId).where('id', '=', id).executeTakeFirst();
    },

    eventTypes(businessId: string, page: PageRequest) {
      const q = db.selectFrom('event_types').selectAll().where('business_id', '=', businessId);
      return fetchPage(q, page, seqIn('event_types', businessId));
    },
    eventType(businessId: string, name: string): Promise<EventTypeRow | undefined> {
      return db.selectFrom('event_types').selectAll().where('business_id', '=', businessId).where('name', '=', name).executeTakeFirst();
    },

    rewards(businessId: string, filters: { active?: boolean | undefined; reward_type?: string | undefined }, page: PageRequest) {
      let q = db.selectFrom('rewards').selectAll().where('business_id', '=', businessId);
      if (filters.active !== undefined) q = q.where('active', '=', filters.active);
      if (filters.reward_type !== undefined) q = q.where('reward_type', '=', filters.reward_type);
      return fetchPage(q, page, seqIn('rewards', businessId));
    },
    reward(businessId: string, id: string): Promise<RewardRow | undefined> {
      return db.selectFrom('rewards').selectAll().where('business_id', '=', businessId).where('id', '=', id).executeTakeFirst();
    },

    redemptions(businessId: string, customerId: string, page: PageRequest) {
      const scope = customerScope(db, businessId, customerId);
      const q = db.selectFrom('redemptions').selectAll().where(scope.rowOf('redemptions'));
      return fetchPage(q, page, seqIn('redemptions', businessId), scope.around);
    },
    redemption(businessId: string, id: string): Promise<RedemptionRow | undefined> {
      return db.selectFrom('redemptions').selectAll().where('business_id', '=', businessId).where('id', '=', id).executeTakeFirst();
    },

    events(businessId: string, filters: { customer_id?: string | undefined; event_type?: string | undefined }, page: PageRequest) {
      let q = db.selectFrom('recorded_events').selectAll().where('business_id', '=', businessId);
      if (filters.customer_id !== undefined) q = q.where('customer_id', '=', filters.customer_id);
      if (filters.event_type !== undefined) q = q.where('event_type', '=', filters.event_type);
      return fetchPage(q, page, seqIn('recorded_events', businessId));
    },
    event(businessId: string, id: string): Promise<RecordedEventRow | undefined> {
      return db.selectFrom('recorded_events').selectAll().where('business_id', '=', businessId).where('id', '=', id).executeTakeFirst();
    },
  };
}

export type CatalogQueries = ReturnType<typeof catalogQueries>;

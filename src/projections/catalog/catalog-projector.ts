import type { Transaction } from 'kysely';
import { sql } from 'kysely';
import { streams } from '../../commands/streams.js';
import type { Database } from '../../db/schema.js';
import type { EventData, EventType } from '../../events/catalogue.js';
import type { StoredEvent } from '../../store/event-store.js';
import type { Projector } from '../projector.js';

const json = (value: unknown) => JSON.stringify(value);

/** The program a business runs: `tiers`, `event_types`, `rewards` (with stock and redeemed counts) and `redemptions`. */
export const catalogProjector: Projector = {
  name: 'catalog',
  tables: ['tiers', 'event_types', 'rewards', 'redemptions'],
  handles: new Set<EventType>([
    'TierCreated',
    'TierUpdated',
    'EventTypeCreated',
    'EventTypeUpdated',
    'RewardCreated',
    'RewardUpdated',
    'RewardStockTaken',
    'RewardStockReturned',
    'RewardRedeemed',
    'RedemptionCancelled',
  ]),

  async apply(event: StoredEvent, trx: Transaction<Database>) {
    const businessId = event.metadata.business_id;
    const at = event.recordedAt;
    switch (event.type as EventType) {
      case 'TierCreated': {
        const t = event.data as EventData<'TierCreated'>;
        await trx
          .insertInto('tiers')
          .values({
            id: t.tier_id,
            business_id: businessId,
            name: t.name,
            points_threshold: t.points_threshold,
            multiplier: String(t.multiplier),
            benefits: json(t.benefits),
            metadata: json(t.metadata),
            created_at: at,
            updated_at: at,
          })
          .execute();
        return;
      }
      case 'TierUpdated': {
        const { tier_id, multiplier, benefits, metadata, ...rest } = event.data as EventData<'TierUpdated'>;
        await trx
          .updateTable('tiers')
          .set({
            ...rest,
            ...(multiplier !== undefined ? { multiplier: String(multiplier) } : {}),
            ...(benefits !== undefined ? { benefits: json(benefits) } : {}),
            ...(metadata !== undefined ? { metadata: json(metadata) } : {}),
            updated_at: at,
          })
          .where('id', '=', tier_id)
          .execute();
        return;
      }
      case 'EventTypeCreated': {
        const e = event.data as EventData<'EventTypeCreated'>;
        await trx
          .insertInto('event_types')
          .values({
            id: e.event_type_id,
            business_id: businessId,
            name: e.name,
            display_name: e.display_name,
            default_points: e.default_points,
            rules: json(e.rules),
            metadata: json(e.metadata),
            created_at: at,
            updated_at: at,
          })
          .execute();
        return;
      }
      case 'EventTypeUpdated': {
        const { name, rules, metadata, event_type_id: _id, ...rest } = event.data as EventData<'EventTypeUpdated'>;
        await trx
          .updateTable('event_types')
          .set({
            ...rest,
            ...(rules !== undefined ? { rules: json(rules) } : {}),
            ...(metadata !== undefined ? { metadata: json(metadata) } : {}),
            updated_at: at,
          })
          .where('business_id', '=', businessId)
          .where('name', '=', name)
          .execute();
        return;
      }
      case 'RewardCreated': {
        const r = event.data as EventData<'RewardCreated'>;
        await trx
          .insertInto('rewards')
          .values({
            id: r.reward_id,
            business_id: r.business_id,
            title: r.title,
            points_cost: r.points_cost,
            reward_type: r.reward_type,
            description: r.description,
            stock_quantity: r.stock_quantity,
            active: r.active,
            metadata: json(r.metadata),
            redeemed_count: 0,
            created_at: at,
            updated_at: at,
          })
          .execute();
        return;
      }
      case 'RewardUpdated': {
        const { metadata, ...rest } = event.data as EventData<'RewardUpdated'>;
        await trx
          .updateTable('rewards')
          .set({ ...rest, ...(metadata !== undefined ? { metadata: json(metadata) } : {}), updated_at: at })
          .where('id', '=', streams.rewardIdOf(event.streamId))
          .execute();
        return;
      }
      case 'RewardStockTaken':
      case 'RewardStockReturned': {
        const { stock_quantity } = event.data as EventData<'RewardStockTaken'>;
        await trx.updateTable('rewards').set({ stock_quantity, updated_at: at }).where('id', '=', streams.rewardIdOf(event.streamId)).execute();
        return;
      }
      case 'RewardRedeemed': {
        const r = event.data as EventData<'RewardRedeemed'>;
        await trx
          .insertInto('redemptions')
          .values({
            id: r.redemption_id,
            business_id: businessId,
            customer_id: streams.customerIdOf(event.streamId),
            reward_id: r.reward_id,
            points_cost: r.points_cost,
            balance: r.balance,
            status: 'completed',
            reference: r.reference,
            metadata: json(r.metadata),
            created_at: at,
            cancelled_at: null,
          })
          .execute();
        await trx.updateTable('rewards').set({ redeemed_count: sql`redeemed_count + 1` }).where('id', '=', r.reward_id).execute();
        return;
      }
      case 'RedemptionCancelled': {
        const r = event.data as EventData<'RedemptionCancelled'>;
        await trx.updateTable('redemptions').set({ status: 'cancelled', cancelled_at: at }).where('id', '=', r.redemption_id).execute();
        await trx.updateTable('rewards').set({ redeemed_count: sql`redeemed_count - 1` }).where('id', '=', r.reward_id).execute();
        return;
      }
    }
  },
};

import type { Transaction } from 'kysely';
import { sql } from 'kysely';
import { streams } from '../../events/streams.js';
import type { Database } from '../../db/schema.js';
import type { EventData, EventType } from '../../events/catalogue.js';
import type { StoredEvent } from '../../store/event-store.js';
import { insertRows } from '../insert-rows.js';
import type { Projector } from '../projector.js';

const json = (value: unknown) => JSON.stringify(value);

const REDEMPTION_COLUMNS = {
  id: 'text',
  business_id: 'text',
  customer_id: 'text',
  reward_id: 'text',
  points_cost: 'bigint',
  balance: 'bigint',
  reference: 'text',
  metadata: 'jsonb',
  created_at: 'timestamptz',
};

/**
 * The program a business runs: `tiers`, `event_types`, `rewards` (with stock and redeemed counts)
 * and `redemptions`. Redemptions are the frequent events: a batch inserts its redemptions in one
 * statement, then marks its cancellations in one, then moves each reward's `redeemed_count` by its
 * net change in one; the rare definition and stock events keep one statement each, run first
 * (they write other columns, so the order never changes a row).
 */
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

  async applyBatch(events, trx) {
    const redeemed: Record<string, unknown>[] = [];
    const cancelled: Array<{ id: string; cancelled_at: Date }> = [];
    const counts = new Map<string, number>();
    const count = (rewardId: string, by: number) => counts.set(rewardId, (counts.get(rewardId) ?? 0) + by);
    for (const event of events) {
      if (event.type === 'RewardRedeemed') {
        const r = event.data as EventData<'RewardRedeemed'>;
        redeemed.push({
          id: r.redemption_id,
          business_id: event.metadata.business_id,
          customer_id: streams.customerIdOf(event.streamId),
          reward_id: r.reward_id,
          points_cost: r.points_cost,
          balance: r.balance,
          reference: r.reference,
          metadata: r.metadata,
          created_at: event.recordedAt,
        });
        count(r.reward_id, 1);
      } else if (event.type === 'RedemptionCancelled') {
        const r = event.data as EventData<'RedemptionCancelled'>;
        cancelled.push({ id: r.redemption_id, cancelled_at: event.recordedAt });
        count(r.reward_id, -1);
      } else {
        await applyDefinition(event, trx);
      }
    }
    await insertRows(trx, 'redemptions', REDEMPTION_COLUMNS, redeemed, { also: { status: sql`'completed'`, cancelled_at: sql`null` } });
    if (cancelled.length > 0) {
      await sql`update redemptions r set status = 'cancelled', cancelled_at = x.cancelled_at
        from jsonb_to_recordset(${JSON.stringify(cancelled)}::jsonb) as x(id text, cancelled_at timestamptz) where r.id = x.id`.execute(trx);
    }
    const moved = [...counts].filter(([, by]) => by !== 0).map(([id, delta]) => ({ id, delta }));
    if (moved.length > 0) {
      await sql`update rewards w set redeemed_count = w.redeemed_count + x.delta
        from jsonb_to_recordset(${JSON.stringify(moved)}::jsonb) as x(id text, delta integer) where w.id = x.id`.execute(trx);
    }
  },
};

/** Tier, event type and reward definitions and stock: rare, one statement each, in order. */
async function applyDefinition(event: StoredEvent, trx: Transaction<Database>): Promise<void> {
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
  }
}

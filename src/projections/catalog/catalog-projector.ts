import type { Transaction } from 'kysely';
import { sql } from 'kysely';
import { streams } from '../../events/streams.js';
import type { Database } from '../../db/schema.js';
import { rowSetInsert } from '../insert-rows.js';
import { defineProjector, type ProjectedEventOf } from '../projector.js';

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
const insertRedemptions = rowSetInsert('redemptions', REDEMPTION_COLUMNS, { deferred: true, also: { status: sql`'completed'`, cancelled_at: sql`null` } });

interface Batch {
  trx: Transaction<Database>;
  redeemed: Record<string, unknown>[];
  cancelled: Array<{ id: string; cancelled_at: Date }>;
  /** Each reward's net change of `redeemed_count`. */
  counts: Map<string, number>;
}

const count = (batch: Batch, rewardId: string, by: number) => batch.counts.set(rewardId, (batch.counts.get(rewardId) ?? 0) + by);

/** A stock event: the reward's units left. */
async function setStock(event: ProjectedEventOf<'RewardStockTaken' | 'RewardStockReturned'>, { trx }: Batch): Promise<void> {
  await trx
    .updateTable('rewards')
    .set({ stock_quantity: event.data.stock_quantity, updated_at: event.recordedAt })
    .where('id', '=', streams.rewardIdOf(event.streamId))
    .execute();
}

/**
 * The program a business runs: `tiers`, `event_types`, `rewards` (with stock and redeemed counts)
 * and `redemptions`. Redemptions are the frequent events: a batch inserts its redemptions in one
 * statement, then marks its cancellations in one, then moves each reward's `redeemed_count` by its
 * net change in one; the rare definition and stock events keep one statement each, run first
 * (they write other columns, so the order never changes a row).
 */
export const catalogProjector = defineProjector<Batch>({
  name: 'catalog',
  tables: ['tiers', 'event_types', 'rewards', 'redemptions'],
  begin: (trx) => ({ trx, redeemed: [], cancelled: [], counts: new Map() }),
  on: {
    RewardRedeemed(event, batch) {
      const r = event.data;
      batch.redeemed.push({
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
      count(batch, r.reward_id, 1);
    },
    RedemptionCancelled(event, batch) {
      batch.cancelled.push({ id: event.data.redemption_id, cancelled_at: event.recordedAt });
      count(batch, event.data.reward_id, -1);
    },
    async TierCreated({ data: t, metadata, recordedAt: at }, { trx }) {
      await trx
        .insertInto('tiers')
        .values({
          id: t.tier_id,
          business_id: metadata.business_id,
          name: t.name,
          points_threshold: t.points_threshold,
          multiplier: String(t.multiplier),
          benefits: json(t.benefits),
          metadata: json(t.metadata),
          created_at: at,
          updated_at: at,
        })
        .execute();
    },
    async TierUpdated({ data, recordedAt: at }, { trx }) {
      const { tier_id, multiplier, benefits, metadata, ...rest } = data;
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
    },
    async EventTypeCreated({ data: e, metadata, recordedAt: at }, { trx }) {
      await trx
        .insertInto('event_types')
        .values({
          id: e.event_type_id,
          business_id: metadata.business_id,
          name: e.name,
          display_name: e.display_name,
          default_points: e.default_points,
          rules: json(e.rules),
          metadata: json(e.metadata),
          created_at: at,
          updated_at: at,
        })
        .execute();
    },
    async EventTypeUpdated({ data, metadata: meta, recordedAt: at }, { trx }) {
      const { name, rules, metadata, event_type_id: _id, ...rest } = data;
      await trx
        .updateTable('event_types')
        .set({
          ...rest,
          ...(rules !== undefined ? { rules: json(rules) } : {}),
          ...(metadata !== undefined ? { metadata: json(metadata) } : {}),
          updated_at: at,
        })
        .where('business_id', '=', meta.business_id)
        .where('name', '=', name)
        .execute();
    },
    async RewardCreated({ data: r, recordedAt: at }, { trx }) {
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
    },
    async RewardUpdated({ data, streamId, recordedAt: at }, { trx }) {
      const { metadata, ...rest } = data;
      await trx
        .updateTable('rewards')
        .set({ ...rest, ...(metadata !== undefined ? { metadata: json(metadata) } : {}), updated_at: at })
        .where('id', '=', streams.rewardIdOf(streamId))
        .execute();
    },
    RewardStockTaken: setStock,
    RewardStockReturned: setStock,
  },
  async end({ trx, redeemed, cancelled, counts }) {
    await insertRedemptions(trx, redeemed);
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
});

import { sql, type Transaction } from 'kysely';
import { streams } from '../../commands/streams.js';
import type { Database } from '../../db/schema.js';
import type { EventData, EventType } from '../../events/catalogue.js';
import type { StoredEvent } from '../../store/event-store.js';
import type { Projector } from '../projector.js';
import { LEDGER_EVENT_TYPES, type LedgerEntry, ledgerEntryFromEvent } from './ledger-entry.js';

/** How a ledger line moves the lifetime totals (its balance is already in the line). */
function lifetimeEffect(entry: LedgerEntry): { earned: number; redeemed: number } {
  switch (entry.type) {
    case 'earn':
    case 'adjust':
    case 'event':
      return { earned: entry.amount, redeemed: 0 };
    case 'deduct':
    case 'redemption':
      return { earned: 0, redeemed: entry.amount };
    case 'redemption_cancelled':
      return { earned: 0, redeemed: -entry.amount };
  }
}

/**
 * `customers` (profile, balance, lifetime totals, tier), `ledger_entries` (every balance change
 * with the balance after it), `recorded_events` and `tier_changes`.
 */
export const customersProjector: Projector = {
  name: 'customers',
  tables: ['customers', 'ledger_entries', 'recorded_events', 'tier_changes'],
  handles: new Set<EventType>([
    'CustomerRegistered',
    'CustomerUpdated',
    'PointsEarned',
    'PointsDeducted',
    'PointsAdjusted',
    'EventRecorded',
    'RewardRedeemed',
    'RedemptionCancelled',
    'TierUpgraded',
    'TierUpdated',
  ]),

  async apply(event: StoredEvent, trx: Transaction<Database>) {
    const customerId = streams.customerIdOf(event.streamId);
    const businessId = event.metadata.business_id;
    switch (event.type as EventType) {
      case 'CustomerRegistered': {
        const data = event.data as EventData<'CustomerRegistered'>;
        await trx
          .insertInto('customers')
          .values({
            id: data.customer_id,
            business_id: data.business_id,
            email: data.email,
            email_lower: data.email?.toLowerCase() ?? null,
            phone: data.phone,
            first_name: data.first_name,
            last_name: data.last_name,
            external_reference: data.external_reference,
            metadata: JSON.stringify(data.metadata),
            points_balance: 0,
            lifetime_earned: 0,
            lifetime_redeemed: 0,
            tier_id: null,
            tier: JSON.stringify(null),
            created_at: event.recordedAt,
            updated_at: event.recordedAt,
          })
          .execute();
        return;
      }
      case 'CustomerUpdated': {
        const { metadata, ...fields } = event.data as EventData<'CustomerUpdated'>;
        await trx
          .updateTable('customers')
          .set({
            ...fields,
            ...(fields.email !== undefined ? { email_lower: fields.email?.toLowerCase() ?? null } : {}),
            ...(metadata !== undefined ? { metadata: JSON.stringify(metadata) } : {}),
            updated_at: event.recordedAt,
          })
          .where('id', '=', customerId)
          .execute();
        return;
      }
      case 'TierUpgraded': {
        const data = event.data as EventData<'TierUpgraded'>;
        await trx
          .updateTable('customers')
          .set({
            tier_id: data.new_tier.id,
            tier: JSON.stringify({ ...data.new_tier, achieved_at: event.recordedAt.toISOString() }),
            updated_at: event.recordedAt,
          })
          .where('id', '=', customerId)
          .execute();
        await trx
          .insertInto('tier_changes')
          .values({
            business_id: businessId,
            customer_id: customerId,
            previous_tier_id: data.previous_tier?.id ?? null,
            new_tier_id: data.new_tier.id,
            lifetime_earned: data.lifetime_earned,
            changed_at: event.recordedAt,
          })
          .execute();
        return;
      }
      case 'TierUpdated': {
        // A renamed or re-weighted tier shows as such on the customers that hold it.
        const { tier_id, ...changes } = event.data as EventData<'TierUpdated'>;
        const shown = Object.fromEntries(
          Object.entries({ name: changes.name, points_threshold: changes.points_threshold, multiplier: changes.multiplier, benefits: changes.benefits }).filter(
            ([, v]) => v !== undefined,
          ),
        );
        if (Object.keys(shown).length === 0) return;
        await trx
          .updateTable('customers')
          .set({ tier: sql`tier || ${JSON.stringify(shown)}::jsonb` as never })
          .where('tier_id', '=', tier_id)
          .execute();
        return;
      }
    }
    if (LEDGER_EVENT_TYPES.has(event.type)) await applyBalanceChange(event, trx, customerId, businessId);
  },
};

async function applyBalanceChange(event: StoredEvent, trx: Transaction<Database>, customerId: string, businessId: string) {
  if (event.type === 'EventRecorded') {
    const data = event.data as EventData<'EventRecorded'>;
    await trx
      .insertInto('recorded_events')
      .values({
        id: data.event_id,
        business_id: businessId,
        customer_id: customerId,
        event_type: data.event_type,
        properties: JSON.stringify(data.properties),
        reference: data.reference,
        base_points: data.base_points,
        multiplier: String(data.multiplier),
        points_awarded: data.points_awarded,
        balance: data.balance,
        created_at: event.recordedAt,
      })
      .execute();
  }
  const entry = ledgerEntryFromEvent(event);
  if (!entry) return;
  const { earned, redeemed } = lifetimeEffect(entry);
  await trx
    .updateTable('customers')
    .set((eb) => ({
      points_balance: entry.balance,
      lifetime_earned: eb('lifetime_earned', '+', earned),
      lifetime_redeemed: eb('lifetime_redeemed', '+', redeemed),
      updated_at: event.recordedAt,
    }))
    .where('id', '=', customerId)
    .execute();
  await trx
    .insertInto('ledger_entries')
    .values({
      ...entry,
      business_id: businessId,
      multiplier: entry.multiplier === null ? null : String(entry.multiplier),
      metadata: JSON.stringify(entry.metadata),
    })
    .execute();
}

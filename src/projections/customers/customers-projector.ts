import { sql, type Transaction } from 'kysely';
import { streams } from '../../events/streams.js';
import type { Database } from '../../db/schema.js';
import type { EventData, EventType } from '../../events/catalogue.js';
import type { StoredEvent } from '../../store/event-store.js';
import { insertRows } from '../insert-rows.js';
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

/** What a batch's balance changes do to one customer row: the last balance, summed lifetime moves. */
interface NetChange {
  id: string;
  balance: number;
  earned: number;
  redeemed: number;
  /** The last balance change's time, or null when a later profile or tier event set `updated_at`. */
  updated_at: Date | null;
}

const CUSTOMER_COLUMNS = {
  id: 'text',
  business_id: 'text',
  email: 'text',
  email_lower: 'text',
  phone: 'text',
  first_name: 'text',
  last_name: 'text',
  external_reference: 'text',
  metadata: 'jsonb',
  created_at: 'timestamptz',
  updated_at: 'timestamptz',
};
const LEDGER_COLUMNS = {
  id: 'text',
  business_id: 'text',
  customer_id: 'text',
  type: 'text',
  amount: 'bigint',
  balance: 'bigint',
  base_amount: 'bigint',
  multiplier: 'numeric',
  description: 'text',
  reference: 'text',
  metadata: 'jsonb',
  created_at: 'timestamptz',
};
const RECORDED_EVENT_COLUMNS = {
  id: 'text',
  business_id: 'text',
  customer_id: 'text',
  event_type: 'text',
  properties: 'jsonb',
  reference: 'text',
  base_points: 'bigint',
  multiplier: 'numeric',
  points_awarded: 'bigint',
  balance: 'bigint',
  created_at: 'timestamptz',
};
const TIER_CHANGE_COLUMNS = {
  business_id: 'text',
  customer_id: 'text',
  previous_tier_id: 'text',
  new_tier_id: 'text',
  lifetime_earned: 'bigint',
  changed_at: 'timestamptz',
};

/**
 * `customers` (profile, balance, lifetime totals, tier), `ledger_entries` (every balance change
 * with the balance after it), `recorded_events` and `tier_changes`.
 *
 * Set-based: a batch costs one insert per table it adds rows to and ONE update of all the
 * customers whose balance moved (the balance after each change is in its event, so the last one
 * is the customer's; lifetime totals move by the batch's sums). Profile and tier events are rare
 * and keep one statement each, run before that update; the order of the statements never changes
 * a row, since they write different columns (and `updated_at` goes to the customer's last event).
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

  async applyBatch(events, trx) {
    const registered: Record<string, unknown>[] = [];
    const profileAndTier: StoredEvent[] = [];
    const ledger: Record<string, unknown>[] = [];
    const recorded: Record<string, unknown>[] = [];
    const tierChanges: Record<string, unknown>[] = [];
    const net = new Map<string, NetChange>();

    for (const event of events) {
      const customerId = streams.customerIdOf(event.streamId);
      const businessId = event.metadata.business_id;
      switch (event.type as EventType) {
        case 'CustomerRegistered': {
          const data = event.data as EventData<'CustomerRegistered'>;
          registered.push({
            id: data.customer_id,
            business_id: data.business_id,
            email: data.email,
            email_lower: data.email?.toLowerCase() ?? null,
            phone: data.phone,
            first_name: data.first_name,
            last_name: data.last_name,
            external_reference: data.external_reference,
            metadata: data.metadata,
            created_at: event.recordedAt,
            updated_at: event.recordedAt,
          });
          continue;
        }
        case 'TierUpgraded': {
          const data = event.data as EventData<'TierUpgraded'>;
          tierChanges.push({
            business_id: businessId,
            customer_id: customerId,
            previous_tier_id: data.previous_tier?.id ?? null,
            new_tier_id: data.new_tier.id,
            lifetime_earned: data.lifetime_earned,
            changed_at: event.recordedAt,
          });
          profileAndTier.push(event);
          markTouched(net, customerId);
          continue;
        }
        case 'CustomerUpdated':
          profileAndTier.push(event);
          markTouched(net, customerId);
          continue;
        case 'TierUpdated':
          profileAndTier.push(event);
          continue;
      }
      if (event.type === 'EventRecorded') {
        const data = event.data as EventData<'EventRecorded'>;
        recorded.push({
          id: data.event_id,
          business_id: businessId,
          customer_id: customerId,
          event_type: data.event_type,
          properties: data.properties,
          reference: data.reference,
          base_points: data.base_points,
          multiplier: String(data.multiplier),
          points_awarded: data.points_awarded,
          balance: data.balance,
          created_at: event.recordedAt,
        });
      }
      const entry = LEDGER_EVENT_TYPES.has(event.type) ? ledgerEntryFromEvent(event) : null;
      if (!entry) continue;
      const { earned, redeemed } = lifetimeEffect(entry);
      const change = net.get(customerId) ?? { id: customerId, balance: 0, earned: 0, redeemed: 0, updated_at: null };
      change.balance = entry.balance;
      change.earned += earned;
      change.redeemed += redeemed;
      change.updated_at = event.recordedAt;
      net.set(customerId, change);
      ledger.push({
        id: entry.id,
        business_id: businessId,
        customer_id: entry.customer_id,
        type: entry.type,
        amount: entry.amount,
        balance: entry.balance,
        base_amount: entry.base_amount,
        multiplier: entry.multiplier === null ? null : String(entry.multiplier),
        description: entry.description,
        reference: entry.reference,
        metadata: entry.metadata,
        created_at: entry.created_at,
      });
    }

    await insertRows(trx, 'customers', CUSTOMER_COLUMNS, registered, {
      also: { points_balance: sql`0`, lifetime_earned: sql`0`, lifetime_redeemed: sql`0`, tier_id: sql`null`, tier: sql`'null'::jsonb` },
    });
    for (const event of profileAndTier) await applyProfileOrTier(event, trx);
    await insertRows(trx, 'tier_changes', TIER_CHANGE_COLUMNS, tierChanges);
    await insertRows(trx, 'recorded_events', RECORDED_EVENT_COLUMNS, recorded);
    await insertRows(trx, 'ledger_entries', LEDGER_COLUMNS, ledger);
    if (net.size === 0) return;
    await sql`update customers c set
        points_balance = x.balance,
        lifetime_earned = c.lifetime_earned + x.earned,
        lifetime_redeemed = c.lifetime_redeemed + x.redeemed,
        updated_at = coalesce(x.updated_at, c.updated_at)
      from jsonb_to_recordset(${JSON.stringify([...net.values()])}::jsonb) as x(id text, balance bigint, earned bigint, redeemed bigint, updated_at timestamptz)
      where c.id = x.id`.execute(trx);
  },
};

/** A profile or tier event came after the customer's last balance change: it owns `updated_at`. */
function markTouched(net: Map<string, NetChange>, customerId: string): void {
  const change = net.get(customerId);
  if (change) change.updated_at = null;
}

/** The rare events that touch a customer row other than through its balance: one statement each, in order. */
async function applyProfileOrTier(event: StoredEvent, trx: Transaction<Database>): Promise<void> {
  const customerId = streams.customerIdOf(event.streamId);
  switch (event.type as EventType) {
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
}

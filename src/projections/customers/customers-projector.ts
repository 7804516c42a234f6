import type { Transaction } from 'kysely';
import { streams } from '../../commands/streams.js';
import type { Database } from '../../db/schema.js';
import type { EventData, EventType } from '../../events/catalogue.js';
import type { StoredEvent } from '../../store/event-store.js';
import type { Projector } from '../projector.js';
import { ledgerEntryFromEvent } from './ledger-entry.js';

/** `customers` (profile, balance, lifetime totals, tier) and `ledger_entries` (every balance change). */
export const customersProjector: Projector = {
  name: 'customers',
  handles: new Set<EventType>(['CustomerRegistered', 'CustomerUpdated', 'PointsEarned', 'PointsDeducted', 'PointsAdjusted']),

  async apply(event: StoredEvent, trx: Transaction<Database>) {
    const customerId = streams.customerIdOf(event.streamId);
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
      case 'PointsEarned':
      case 'PointsDeducted':
      case 'PointsAdjusted': {
        const entry = ledgerEntryFromEvent(event);
        const redeemed = entry.type === 'deduct' ? entry.amount : 0;
        const earned = entry.type === 'deduct' ? 0 : entry.amount;
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
            business_id: event.metadata.business_id,
            multiplier: entry.multiplier === null ? null : String(entry.multiplier),
            metadata: JSON.stringify(entry.metadata),
          })
          .execute();
        return;
      }
    }
  },
};

import type { Transaction } from 'kysely';
import type { Database } from '../../db/schema.js';
import type { EventData, EventType } from '../../events/catalogue.js';
import type { StoredEvent } from '../../store/event-store.js';
import type { Projector } from '../projector.js';

/** `businesses` and `api_keys`: what authentication and the CLI read. */
export const accessProjector: Projector = {
  name: 'access',
  tables: ['businesses', 'api_keys'],
  handles: new Set<EventType>(['BusinessCreated', 'BusinessCustomerCounted', 'ApiKeyCreated', 'ApiKeyRevoked']),

  async apply(event: StoredEvent, trx: Transaction<Database>) {
    switch (event.type as EventType) {
      case 'BusinessCreated': {
        const data = event.data as EventData<'BusinessCreated'>;
        await trx
          .insertInto('businesses')
          .values({ id: data.business_id, name: data.name, plan: data.plan, customer_count: 0, created_at: event.recordedAt })
          .execute();
        return;
      }
      case 'BusinessCustomerCounted': {
        const data = event.data as EventData<'BusinessCustomerCounted'>;
        await trx
          .updateTable('businesses')
          .set({ customer_count: data.customer_count })
          .where('id', '=', event.metadata.business_id)
          .execute();
        return;
      }
      case 'ApiKeyCreated': {
        const data = event.data as EventData<'ApiKeyCreated'>;
        await trx
          .insertInto('api_keys')
          .values({
            id: data.key_id,
            business_id: data.business_id,
            type: data.type,
            name: data.name,
            permissions: data.permissions,
            key_hash: data.key_hash,
            key_hint: data.key_hint,
            created_at: event.recordedAt,
            revoked_at: null,
          })
          .execute();
        return;
      }
      case 'ApiKeyRevoked': {
        const data = event.data as EventData<'ApiKeyRevoked'>;
        await trx.updateTable('api_keys').set({ revoked_at: event.recordedAt }).where('id', '=', data.key_id).execute();
        return;
      }
    }
  },
};

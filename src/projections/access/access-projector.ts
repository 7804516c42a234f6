import { sql, type Transaction } from 'kysely';
import type { Database } from '../../db/schema.js';
import type { EventData, EventType } from '../../events/catalogue.js';
import type { StoredEvent } from '../../store/event-store.js';
import type { Projector } from '../projector.js';

/**
 * `businesses` and `api_keys`: what authentication and the CLI read. Every registration counts
 * its business's customers: a batch keeps only each business's last count (one update for all);
 * the rare business and key events keep one statement each, run first.
 */
export const accessProjector: Projector = {
  name: 'access',
  tables: ['businesses', 'api_keys'],
  handles: new Set<EventType>(['BusinessCreated', 'BusinessCustomerCounted', 'BusinessPlanChanged', 'ApiKeyCreated', 'ApiKeyRevoked']),

  async applyBatch(events, trx) {
    const counts = new Map<string, number>();
    for (const event of events) {
      if (event.type === 'BusinessCustomerCounted') counts.set(event.metadata.business_id, (event.data as EventData<'BusinessCustomerCounted'>).customer_count);
      else {
        await applyOne(event, trx);
        // Its count supersedes the ones before it in this batch.
        if (event.type === 'BusinessPlanChanged') counts.delete(event.metadata.business_id);
      }
    }
    if (counts.size === 0) return;
    await sql`update businesses b set customer_count = x.customer_count
      from jsonb_to_recordset(${JSON.stringify([...counts].map(([id, customer_count]) => ({ id, customer_count })))}::jsonb) as x(id text, customer_count integer)
      where b.id = x.id`.execute(trx);
  },
};

async function applyOne(event: StoredEvent, trx: Transaction<Database>): Promise<void> {
  switch (event.type as EventType) {
    case 'BusinessCreated': {
      const data = event.data as EventData<'BusinessCreated'>;
      await trx
        .insertInto('businesses')
        .values({ id: data.business_id, name: data.name, plan: data.plan, customer_count: 0, created_at: event.recordedAt })
        .execute();
      return;
    }
    case 'BusinessPlanChanged': {
      const data = event.data as EventData<'BusinessPlanChanged'>;
      await trx
        .updateTable('businesses')
        .set({ plan: data.plan, customer_count: data.customer_count })
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
}

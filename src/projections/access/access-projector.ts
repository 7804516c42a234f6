import { sql, type Transaction } from 'kysely';
import type { Database } from '../../db/schema.js';
import { defineProjector } from '../projector.js';

interface Batch {
  trx: Transaction<Database>;
  /** Each business's last customer count in the batch. */
  counts: Map<string, number>;
}

/**
 * `businesses` and `api_keys`: what authentication and the CLI read. Every registration counts
 * its business's customers: a batch keeps only each business's last count (one update for all);
 * the rare business and key events keep one statement each, run first.
 */
export const accessProjector = defineProjector<Batch>({
  name: 'access',
  tables: ['businesses', 'api_keys'],
  begin: (trx) => ({ trx, counts: new Map() }),
  on: {
    BusinessCustomerCounted(event, { counts }) {
      counts.set(event.metadata.business_id, event.data.customer_count);
    },
    async BusinessCreated({ data, recordedAt }, { trx }) {
      await trx.insertInto('businesses').values({ id: data.business_id, name: data.name, plan: data.plan, customer_count: 0, created_at: recordedAt }).execute();
    },
    async BusinessPlanChanged({ data, metadata }, { trx, counts }) {
      await trx.updateTable('businesses').set({ plan: data.plan, customer_count: data.customer_count }).where('id', '=', metadata.business_id).execute();
      // Its count supersedes the ones before it in this batch.
      counts.delete(metadata.business_id);
    },
    async ApiKeyCreated({ data, recordedAt }, { trx }) {
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
          created_at: recordedAt,
          revoked_at: null,
        })
        .execute();
    },
    async ApiKeyRevoked({ data, recordedAt }, { trx }) {
      await trx.updateTable('api_keys').set({ revoked_at: recordedAt }).where('id', '=', data.key_id).execute();
    },
  },
  async end({ trx, counts }) {
    if (counts.size === 0) return;
    await sql`update businesses b set customer_count = x.customer_count
      from jsonb_to_recordset(${JSON.stringify([...counts].map(([id, customer_count]) => ({ id, customer_count })))}::jsonb) as x(id text, customer_count integer)
      where b.id = x.id`.execute(trx);
  },
});

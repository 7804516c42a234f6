import { withMetadata } from '../../src/commands/aggregate.js';
import type { CustomerEvent } from '../../src/commands/customer/customer-decider.js';
import { openDatabase } from '../../src/db/database.js';
import { streams } from '../../src/events/streams.js';
import { newId } from '../../src/ids.js';
import type { AppendWrite } from '../../src/store/event-store.js';
import { PostgresEventStore } from '../../src/store/postgres-event-store.js';

/** Customers per append while seeding. */
const CUSTOMERS_PER_APPEND = 500;

/**
 * Registrations and `lots` earns of 10 points (one lot each, expiring at `dueAt`) over `customers`
 * customers, appended straight to the log of the database at `url` (the bulk path: as the decider
 * writes them, without requests). The seeded customers' ids.
 */
export async function seedLots(url: string, businessId: string, customers: number, lots: number, dueAt: Date): Promise<string[]> {
  const ids: string[] = [];
  const database = await openDatabase({ databaseUrl: url, poolSize: 3 });
  try {
    const eventStore = new PostgresEventStore(database.db);
    const ctx = { businessId, actor: 'bench-seed', requestId: null, idempotencyKey: null, now: new Date() };
    let left = lots;
    for (let made = 0; made < customers; ) {
      const writes: AppendWrite[] = [];
      for (let i = 0; i < CUSTOMERS_PER_APPEND && made < customers; i++, made++) {
        const customerId = newId('customer');
        ids.push(customerId);
        const events: CustomerEvent[] = [
          {
            type: 'CustomerRegistered',
            data: { customer_id: customerId, business_id: businessId, email: `${customerId}@bench.example`, phone: null, first_name: null, last_name: null, external_reference: null, metadata: {} },
          },
        ];
        const count = Math.min(Math.ceil(lots / customers), left);
        left -= count;
        for (let n = 1; n <= count; n++) {
          events.push({
            type: 'PointsEarned',
            data: {
              transaction_id: newId('transaction'),
              amount: 10,
              balance: 10 * n,
              description: null,
              reference: null,
              metadata: {},
              base_amount: 10,
              multiplier: 1,
              available_at: null,
              expires_at: dueAt.toISOString(),
            },
          });
        }
        writes.push({ stream: streams.customer(customerId), expected: 'no_stream', events: withMetadata(events, ctx, newId) });
      }
      await eventStore.append(writes);
    }
  } finally {
    await database.close();
  }
  return ids;
}

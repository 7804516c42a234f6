import { performance } from 'node:perf_hooks';
import { withMetadata } from '../../src/commands/aggregate.js';
import { type CustomerCommand, type CustomerEvent, customerDecider } from '../../src/commands/customer/customer-decider.js';
import { streams } from '../../src/events/streams.js';
import { openDatabase } from '../../src/db/database.js';
import { newId } from '../../src/ids.js';
import type { AppendWrite } from '../../src/store/event-store.js';
import { PostgresEventStore } from '../../src/store/postgres-event-store.js';
import { createDatabase, databaseUrl, dropDatabase, withClient } from './postgres.js';
import { initStore, runCli } from './service.js';

/** Events of each seeded customer: its registration and this many earns less one. */
const EVENTS_PER_CUSTOMER = 100;
/** Customers per append: 100 × 100 = 10,000 events per append. */
const CUSTOMERS_PER_APPEND = 100;
/** Appends in flight at once while seeding (the store batches concurrent ones). */
const SEED_CONCURRENCY = 4;

export interface RebuildMeasurement {
  events: number;
  customers: number;
  seedSeconds: number;
  rebuildSeconds: number;
  eventsPerSecond: number;
  /** What the rebuilt read models hold, checked against what was seeded. */
  check: { exact: boolean; detail: string };
}

/**
 * The projection rebuild row: a fresh database (`loyalty init`), `events` events seeded through
 * the bulk path over many customers (registrations and earns decided by the service's own decider,
 * appended by its own event store, 10,000 events per append), then `loyalty projections rebuild`
 * timed as the real CLI process, start-up included, and its read models checked.
 */
export async function measureRebuild(events: number, log: (message: string) => void): Promise<RebuildMeasurement> {
  const dbName = await createDatabase('rebuild');
  try {
    const store = { databaseUrl: databaseUrl(dbName) };
    const keys = await initStore(store);
    const customers = Math.max(1, Math.round(events / EVENTS_PER_CUSTOMER));
    log(`rebuild: seeding ${events.toLocaleString('en-US')} events over ${customers.toLocaleString('en-US')} customers`);
    const t0 = performance.now();
    await seedCustomers(dbName, keys.business_id, customers, events);
    const seedSeconds = (performance.now() - t0) / 1000;
    const logged = await withClient(async (c) => Number((await c.query('select count(*) as n from events')).rows[0]!.n), dbName);
    log(`rebuild: seeded in ${seedSeconds.toFixed(1)} s; running \`loyalty projections rebuild\` over ${logged.toLocaleString('en-US')} events`);
    const t1 = performance.now();
    await runCli(store, ['projections', 'rebuild']);
    const rebuildSeconds = (performance.now() - t1) / 1000;
    const check = await checkReadModels(dbName, events - customers, customers);
    return { events: logged, customers, seedSeconds, rebuildSeconds, eventsPerSecond: logged / rebuildSeconds, check };
  } finally {
    await dropDatabase(dbName);
  }
}

/** Each customer: a registration and earns of 1 point, `total` events in all. */
export async function seedCustomers(dbName: string, businessId: string, customers: number, total: number): Promise<void> {
  await withSeedStore(dbName, businessId, async (store, ctx) => {
    let next = 0;
    let left = total;
    const writeOf = (): AppendWrite => {
      const customerId = newId('customer');
      const count = Math.min(EVENTS_PER_CUSTOMER, left - (customers - next - 1)); // every customer gets at least its registration
      next++;
      left -= count;
      let state = customerDecider.initialState();
      const decided: CustomerEvent[] = [];
      const take = (events: CustomerEvent[]) => {
        for (const event of events) state = customerDecider.evolve(state, event);
        decided.push(...events);
      };
      take(customerDecider.decide({ type: 'RegisterCustomer', customerId, businessId, profile: profileOf(next) }, state));
      while (decided.length < count) {
        take(customerDecider.decide(onePoint('earn'), state));
      }
      return { stream: streams.customer(customerId), expected: 'no_stream', events: withMetadata(decided, ctx, newId) };
    };
    await appendEach(store, customers, writeOf);
  });
}

/**
 * A log with spends, in the shape a live service writes: customers' histories interleaved in rounds
 * (each round appends the next `ROUND` events of every customer), so a page of the log holds a
 * slice of many customers, and every `SPEND_EVERY`th event of a customer a deduction of 1 point,
 * whose lot share names a lot credited rounds (pages) before. For the rebuild's cost on logs whose
 * debits read lots back (`rebuild-profile.ts seed-spends`). Answers the balances' sum.
 */
export async function seedCustomersWithSpends(dbName: string, businessId: string, customers: number, total: number): Promise<number> {
  const ROUND = 10;
  const SPEND_EVERY = 10;
  const perCustomer = Math.max(1, Math.floor(total / customers));
  const all = Array.from({ length: customers }, (_, n) => ({ id: newId('customer'), n, state: customerDecider.initialState(), count: 0, revision: -1 }));
  let balances = 0;
  await withSeedStore(dbName, businessId, async (store, ctx) => {
    const writeOf = (c: (typeof all)[number]): AppendWrite | null => {
      const decided: CustomerEvent[] = [];
      const take = (events: CustomerEvent[]) => {
        for (const event of events) c.state = customerDecider.evolve(c.state, event);
        decided.push(...events);
      };
      if (c.count === 0) {
        take(customerDecider.decide({ type: 'RegisterCustomer', customerId: c.id, businessId, profile: profileOf(c.n + 1) }, c.state));
        c.count++;
      }
      while (decided.length < ROUND && c.count < perCustomer) {
        const spends = c.count % SPEND_EVERY === 0 && c.state.balance > 0;
        take(customerDecider.decide(onePoint(spends ? 'deduct' : 'earn'), c.state));
        balances += spends ? -1 : 1;
        c.count++;
      }
      if (decided.length === 0) return null;
      const write: AppendWrite = { stream: streams.customer(c.id), expected: c.revision < 0 ? 'no_stream' : c.revision, events: withMetadata(decided, ctx, newId) };
      c.revision += decided.length;
      return write;
    };
    for (let round = 0; round * ROUND < perCustomer; round++) await appendEach(store, all.length, (i) => writeOf(all[i]!));
  });
  return balances;
}

/** Runs `seed` with an event store on database `dbName` and the seed's metadata context. */
async function withSeedStore(
  dbName: string,
  businessId: string,
  seed: (store: PostgresEventStore, ctx: Parameters<typeof withMetadata>[1]) => Promise<void>,
): Promise<void> {
  // Setup, not measured: a 10,000-event append may outlast the service's 5 s query deadline on a busy machine.
  const database = await openDatabase({ databaseUrl: databaseUrl(dbName), poolSize: SEED_CONCURRENCY + 1, timeoutMs: 300_000 });
  try {
    await seed(new PostgresEventStore(database.db), { businessId, actor: 'bench-seed', requestId: null, idempotencyKey: null, now: new Date() });
  } finally {
    await database.close();
  }
}

/** `writeOf(0)` … `writeOf(count - 1)` (null: nothing to write), appended `CUSTOMERS_PER_APPEND` at a time by `SEED_CONCURRENCY` appenders. */
async function appendEach(store: PostgresEventStore, count: number, writeOf: (i: number) => AppendWrite | null): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < count) {
      const writes: AppendWrite[] = [];
      while (writes.length < CUSTOMERS_PER_APPEND && next < count) {
        const write = writeOf(next++);
        if (write) writes.push(write);
      }
      if (writes.length > 0) await store.append(writes);
    }
  };
  await Promise.all(Array.from({ length: SEED_CONCURRENCY }, worker));
}

/** The command of the bulk path's earns: 1 point, no multiplier, no tiers. */
export function earnOnePoint(): CustomerCommand {
  return onePoint('earn');
}

/** An earn or deduction of 1 point, no multiplier, no tiers. */
function onePoint(pointsType: 'earn' | 'deduct'): CustomerCommand {
  return {
    type: 'RecordPoints',
    pointsType,
    transactionId: newId('transaction'),
    amount: 1,
    applyMultiplier: false,
    description: null,
    reference: null,
    metadata: {},
    tiers: [],
  };
}

function profileOf(n: number) {
  return { email: `rebuild-${n}@example.com`, phone: null, first_name: null, last_name: null, external_reference: null, metadata: {} };
}

/** Every seeded customer and earn is in the rebuilt read models, balances summing to the earns. */
async function checkReadModels(dbName: string, earns: number, customers: number): Promise<{ exact: boolean; detail: string }> {
  const row = await withClient(
    async (c) =>
      (
        await c.query<{ customers: string; points: string; ledger: string }>(
          `select (select count(*) from customers) as customers, (select coalesce(sum(points_balance), 0) from customers) as points,
                  (select count(*) from ledger_entries) as ledger`,
        )
      ).rows[0]!,
    dbName,
  );
  const exact = Number(row.customers) === customers && Number(row.points) === earns && Number(row.ledger) === earns;
  return {
    exact,
    detail: `${Number(row.customers).toLocaleString('en-US')} customers, ${Number(row.ledger).toLocaleString('en-US')} ledger lines, balances sum ${Number(row.points).toLocaleString('en-US')} (seeded ${customers.toLocaleString('en-US')} / ${earns.toLocaleString('en-US')})`,
  };
}

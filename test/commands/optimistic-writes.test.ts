import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withMetadata } from '../../src/commands/aggregate.js';
import { businessCommands } from '../../src/commands/business/business-commands.js';
import { commandDeps } from '../../src/commands/command-bus.js';
import { customerCommands } from '../../src/commands/customer/customer-commands.js';
import { customerDecider } from '../../src/commands/customer/customer-decider.js';
import { fold } from '../../src/commands/decider.js';
import { KeyedLock } from '../../src/commands/keyed-lock.js';
import { snapshotStore } from '../../src/commands/snapshot-store.js';
import { SNAPSHOT_EVERY, StateCache } from '../../src/commands/state-cache.js';
import { streams } from '../../src/events/streams.js';
import type { DatabaseHandle } from '../../src/db/database.js';
import type { CommandContext } from '../../src/events/metadata.js';
import type { AppendWrite } from '../../src/store/event-store.js';
import { PostgresEventStore } from '../../src/store/postgres-event-store.js';
import { openTestDatabase } from '../support/test-database.js';
import { observed } from './observed-store.js';
import { systemClock } from '../../src/clock.js';
import { newId } from '../../src/ids.js';

describe('commands on cached state', () => {
  let handle: DatabaseHandle;
  let store: PostgresEventStore;
  beforeAll(async () => {
    handle = await openTestDatabase();
    store = new PostgresEventStore(handle.db);
  });
  afterAll(() => handle.close());

  /** One process's command side on the test database, its reads of the store noted. */
  function processOnDatabase() {
    const { store: watched, reads } = observed(store);
    const deps = commandDeps({ store: watched, ids: newId, clock: systemClock, locks: new KeyedLock(), cache: new StateCache(100, snapshotStore(handle.db)), settle: async () => {} });
    return { deps, reads, customers: customerCommands(deps), businesses: businessCommands(deps) };
  }

  const earn = (amount: number) =>
    ({ pointsType: 'earn', amount, applyMultiplier: true, description: null, reference: null, metadata: {} }) as const;
  const profile = (email: string) => ({ email, phone: null, first_name: null, last_name: null, external_reference: null, metadata: {} });

  async function customerOf(process: ReturnType<typeof processOnDatabase>) {
    const base = { actor: 'test', requestId: null, idempotencyKey: null, now: new Date() };
    const businessId = await process.businesses.create(base, { name: 'Cached', plan: 'unlimited' });
    const ctx: CommandContext = { ...base, businessId };
    const customerId = streams.customerIdOf((await process.customers.register(ctx, profile(`${businessId}@example.com`))).streamId);
    return { ctx, customerId };
  }

  /** The write of an earn of 100 another process decides on the customer's stored state. */
  async function earnedElsewhere(ctx: CommandContext, customerId: string): Promise<AppendWrite> {
    const stream = streams.customer(customerId);
    const before = await store.readStream(stream);
    const state = fold(customerDecider, before.map((e) => ({ type: e.type, data: e.data }) as never));
    const events = customerDecider.decide({ type: 'RecordPoints', transactionId: 'txn_behind', tiers: [], ...earn(100) }, state);
    return { stream, expected: before.at(-1)!.streamPosition, events: withMetadata(events, ctx, newId) };
  }

  it('decides the next write on a stream from the state its last write left, reading nothing', async () => {
    const process = processOnDatabase();
    const { ctx, customerId } = await customerOf(process);
    process.reads.length = 0;
    await process.customers.recordPoints(ctx, customerId, earn(10));
    // The registration left the customer in memory; the program (none yet) is read once.
    expect(process.reads.map((r) => r.stream)).toEqual([streams.program(ctx.businessId)]);
    process.reads.length = 0;

    const recorded = await process.customers.recordPoints(ctx, customerId, earn(5));
    expect(recorded.data).toMatchObject({ amount: 5, balance: 15 });
    expect(process.reads).toEqual([]);
  });

  it('reads the stream again when another process appended behind its cache, and decides on what is there', async () => {
    const process = processOnDatabase();
    const { ctx, customerId } = await customerOf(process);
    await process.customers.recordPoints(ctx, customerId, earn(10));

    const stream = streams.customer(customerId);
    await store.append([await earnedElsewhere(ctx, customerId)]);
    process.reads.length = 0;

    const recorded = await process.customers.recordPoints(ctx, customerId, earn(1));
    expect(recorded.data).toMatchObject({ amount: 1, balance: 111 });
    expect(process.reads.map((r) => r.stream)).toEqual([stream]);
    // And the cache holds the state after that write again.
    process.reads.length = 0;
    expect((await process.customers.recordPoints(ctx, customerId, earn(1))).data).toMatchObject({ balance: 112 });
    expect(process.reads).toEqual([]);
  });

  it('lets commands on one stream decide on the state after an append still queued, and none on one that failed', async () => {
    const process = processOnDatabase();
    const { ctx, customerId } = await customerOf(process);
    await process.customers.recordPoints(ctx, customerId, earn(10));
    const stream = streams.customer(customerId);
    const behind = await earnedElsewhere(ctx, customerId);
    process.reads.length = 0;

    // Queued together behind a batch in flight: another process's append at the revision the
    // cache holds, then two earns decided on the cache, the second on the state after the first.
    // The first fails; the second expects the revision the other append produced, and must fail too.
    const { events: others } = await earnedElsewhere(ctx, customerId);
    const lead = store.append([{ stream: `lead-${customerId}`, expected: 'no_stream', events: others }]);
    const other = store.append([behind]);
    const earns = Promise.all([1, 2].map((amount) => process.customers.recordPoints(ctx, customerId, earn(amount))));
    await Promise.all([lead, other]);
    const [first, second] = await earns;

    const events = await store.readStream(stream);
    let balance = 0;
    for (const e of events.filter((x) => x.type === 'PointsEarned')) {
      balance += e.data.amount;
      expect(e.data.balance, `balance recorded at ${e.streamPosition}`).toBe(balance);
    }
    expect(balance).toBe(113);
    expect([first!.data.balance, second!.data.balance].sort()).toEqual([111, 113]);
    // Neither earn decided on the stale cache alone: they read the stream again.
    expect(process.reads.map((r) => r.stream)).toContain(stream);
  });

  it('confirms a refusal decided on cached state against the store before answering it', async () => {
    const process = processOnDatabase();
    const { ctx, customerId } = await customerOf(process);
    await process.customers.recordPoints(ctx, customerId, earn(10));
    const other = processOnDatabase();
    await other.customers.recordPoints(ctx, customerId, earn(50));

    const deduct = { ...earn(40), pointsType: 'deduct' } as const;
    expect((await process.customers.recordPoints(ctx, customerId, deduct)).data).toMatchObject({ amount: 40, balance: 20 });
    await expect(process.customers.recordPoints(ctx, customerId, { ...deduct, amount: 21 })).rejects.toMatchObject({ code: 'insufficient_points' });
  });

  it('finds a customer it remembers as absent once another process has registered it', async () => {
    const process = processOnDatabase();
    const { ctx } = await customerOf(process);
    const customerId = `cust_later${Date.now()}`;
    await expect(process.customers.recordPoints(ctx, customerId, earn(1))).rejects.toMatchObject({ code: 'customer_not_found' });

    const registered = customerDecider.decide(
      { type: 'RegisterCustomer', customerId, businessId: ctx.businessId, profile: profile(`${customerId}@example.com`) },
      customerDecider.initialState(),
    );
    await store.append([{ stream: streams.customer(customerId), expected: 'no_stream', events: withMetadata(registered, ctx, newId) }]);
    expect((await process.customers.recordPoints(ctx, customerId, earn(3))).data).toMatchObject({ balance: 3 });
  });

  it(`still snapshots every ${SNAPSHOT_EVERY} events of a stream it writes without reading`, async () => {
    const process = processOnDatabase();
    const { ctx, customerId } = await customerOf(process);
    // Registered at revision 0: the earns take the stream to its SNAPSHOT_EVERY-th event.
    for (let i = 1; i < SNAPSHOT_EVERY; i++) await process.customers.recordPoints(ctx, customerId, earn(1));
    await expect.poll(async () => (await snapshotStore(handle.db).get(streams.customer(customerId)))?.revision).toBe(SNAPSHOT_EVERY - 1);
    expect(process.reads.filter((r) => r.stream === streams.customer(customerId))).toEqual([]);
  });
});

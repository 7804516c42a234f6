import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadAggregate, withMetadata } from '../../src/commands/aggregate.js';
import { newId } from '../../src/ids.js';
import { customerDecider } from '../../src/commands/customer/customer-decider.js';
import { fold } from '../../src/commands/decider.js';
import { snapshotStore, STATE_VERSION } from '../../src/commands/snapshot-store.js';
import { SNAPSHOT_EVERY, StateCache } from '../../src/commands/state-cache.js';
import type { DatabaseHandle } from '../../src/db/database.js';
import { PostgresEventStore } from '../../src/store/postgres-event-store.js';
import { openTestDatabase } from '../support/test-database.js';
import { observed } from './observed-store.js';

describe('aggregate snapshots', () => {
  let handle: DatabaseHandle;
  let store: PostgresEventStore;
  const ctx = { businessId: 'biz_snap', actor: 'test', requestId: null, idempotencyKey: null, now: new Date() };

  beforeAll(async () => {
    handle = await openTestDatabase();
    store = new PostgresEventStore(handle.db);
  });
  afterAll(() => handle.close());

  /** A customer with `earns` earns of 1 point, written through the decider as commands would. */
  async function customerWith(earns: number): Promise<string> {
    const id = `cust_${randomUUID().slice(0, 12)}`;
    const stream = `customer-${id}`;
    const profile = { email: `${id}@example.com`, phone: null, first_name: null, last_name: null, external_reference: null, metadata: {} };
    let state = customerDecider.initialState();
    const events = [];
    for (let i = 0; i <= earns; i++) {
      const command =
        i === 0
          ? ({ type: 'RegisterCustomer', customerId: id, businessId: ctx.businessId, profile } as const)
          : ({ type: 'RecordPoints', pointsType: 'earn', transactionId: `txn_${i}`, amount: 1, applyMultiplier: false, description: null, reference: null, metadata: {}, tiers: [] } as const);
      const decided = customerDecider.decide(command, state);
      decided.forEach((e) => (state = customerDecider.evolve(state, e)));
      events.push(...decided);
    }
    for (let i = 0; i < events.length; i += 100) {
      await store.append([{ stream, expected: i === 0 ? 'no_stream' : i - 1, events: withMetadata(events.slice(i, i + 100), ctx, newId) }]);
    }
    return id;
  }

  it(`takes a snapshot every ${SNAPSHOT_EVERY} events, and a cold load reads it and only the events after it, in one round trip`, async () => {
    const id = await customerWith(2 * SNAPSHOT_EVERY + 50);
    const stream = `customer-${id}`;
    const warm = new StateCache(100, snapshotStore(handle.db));
    const loaded = await loadAggregate(store, stream, customerDecider, warm);
    expect(loaded.state.balance).toBe(2 * SNAPSHOT_EVERY + 50);
    await expect.poll(async () => (await snapshotStore(handle.db).get(stream))?.revision).toBe(2 * SNAPSHOT_EVERY + 50);
    const full = fold(customerDecider, (await store.readStream(stream)).map((e) => ({ type: e.type, data: e.data, recordedAt: e.recordedAt }) as never));

    // A new process: nothing in memory, the snapshot in PostgreSQL, read with the events after it.
    const { store: watched, reads } = observed(store);
    const coldCache = new StateCache(100, snapshotStore(handle.db));
    const cold = await loadAggregate(watched, stream, customerDecider, coldCache);
    expect(reads).toEqual([{ stream, from: 2 * SNAPSHOT_EVERY + 51, withSnapshot: true }]);
    expect(cold.state).toEqual(full);
    expect(cold.revision).toBe(2 * SNAPSHOT_EVERY + 50);
    expect(coldCache.loads).toEqual({ memory: 0, snapshot: 1, log: 0 });

    // A store that does not keep snapshots beside its log (KurrentDB): the snapshot, then the events after it.
    const apart = observed(store, { fromSnapshot: false });
    const coldApart = await loadAggregate(apart.store, stream, customerDecider, new StateCache(100, snapshotStore(handle.db)));
    expect(apart.reads).toEqual([{ stream, from: 2 * SNAPSHOT_EVERY + 51 }]);
    expect(coldApart.state).toEqual(full);
  });

  it('reads a stream without a snapshot whole, in the same one round trip, and after more events only those', async () => {
    const id = await customerWith(5);
    const stream = `customer-${id}`;
    const { store: watched, reads } = observed(store);
    const cache = new StateCache(100, snapshotStore(handle.db));
    const cold = await loadAggregate(watched, stream, customerDecider, cache);
    expect(reads).toEqual([{ stream, from: undefined, withSnapshot: true }]);
    expect(cold.state.balance).toBe(5);
    expect(cold.revision).toBe(5);
    expect(cache.loads).toEqual({ memory: 0, snapshot: 0, log: 1 });
    const none = await loadAggregate(watched, 'customer-cust_nobody', customerDecider, cache);
    expect(none.revision).toBe('no_stream');
    expect(none.state).toEqual(customerDecider.initialState());
  });

  it('folds the events written after a snapshot onto it', async () => {
    const id = await customerWith(SNAPSHOT_EVERY + 10);
    const stream = `customer-${id}`;
    await loadAggregate(store, stream, customerDecider, new StateCache(100, snapshotStore(handle.db)));
    await expect.poll(async () => (await snapshotStore(handle.db).get(stream))?.revision).toBe(SNAPSHOT_EVERY + 10);
    const more = customerDecider.decide(
      { type: 'RecordPoints', pointsType: 'deduct', transactionId: 'txn_more', amount: 5, applyMultiplier: false, description: null, reference: null, metadata: {}, tiers: [] },
      (await loadAggregate(store, stream, customerDecider)).state,
    );
    await store.append([{ stream, expected: SNAPSHOT_EVERY + 10, events: withMetadata(more, ctx, newId) }]);
    const cold = await loadAggregate(store, stream, customerDecider, new StateCache(100, snapshotStore(handle.db)));
    expect(cold.state.balance).toBe(SNAPSHOT_EVERY + 10 - 5);
    expect(cold.state.lifetimeRedeemed).toBe(5);
    expect(cold.revision).toBe(SNAPSHOT_EVERY + 11);
  });

  it('ignores a snapshot of another state version and folds the whole stream', async () => {
    const id = await customerWith(SNAPSHOT_EVERY + 5);
    const stream = `customer-${id}`;
    await loadAggregate(store, stream, customerDecider, new StateCache(100, snapshotStore(handle.db)));
    await expect.poll(async () => (await snapshotStore(handle.db).get(stream))?.revision).toBe(SNAPSHOT_EVERY + 5);
    await sql`update aggregate_snapshots set state_version = ${STATE_VERSION + 1}, state = '{"balance": -1}' where stream_id = ${stream}`.execute(handle.db);
    const { store: watched, reads } = observed(store);
    const cold = await loadAggregate(watched, stream, customerDecider, new StateCache(100, snapshotStore(handle.db)));
    expect(reads).toEqual([{ stream, from: undefined, withSnapshot: true }]);
    expect(cold.state.balance).toBe(SNAPSHOT_EVERY + 5);
  });
});

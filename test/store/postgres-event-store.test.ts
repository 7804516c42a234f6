import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type EventStore, START, type StoredEvent } from '../../src/store/event-store.js';
import { APPEND_LOCK_KEY, PostgresEventStore } from '../../src/store/postgres-event-store.js';
import { openTestDatabase, STORE_KIND } from '../support/test-database.js';
import { eventStoreContract } from './event-store.contract.js';
import { compare, event, headCheckpoint, meta, readUntil, waitForLockWaiters, withRawClient } from './store-test-helpers.js';

// A second batch starts whenever one append waits (the default waits for 50), so the contract's
// races run with batches in flight together.
eventStoreContract(STORE_KIND, async () => {
  const handle = await openTestDatabase();
  return { store: new PostgresEventStore(handle.db, { pipelineFrom: 1 }), close: () => handle.close() };
});

const SERVER_ONLY = STORE_KIND !== 'postgres';

describe('postgres event store: readAll under concurrent transactions', () => {
  let handle: Awaited<ReturnType<typeof openTestDatabase>>;
  let store: EventStore;
  beforeAll(async () => {
    handle = await openTestDatabase();
    store = new PostgresEventStore(handle.db);
  });
  afterAll(() => handle?.close());

  it.skipIf(SERVER_ONLY)(
    'makes an append wait while another holds the append lock, and never shows a later position before an earlier one commits (needs a PostgreSQL server: PGlite has one connection)',
    async () => {
      const s = `late-${randomUUID()}`;
      const before = await headCheckpoint(store);

      await withRawClient(handle.url!, async (client) => {
        // Another writer, following the store's protocol, holds the append lock with its row in flight.
        await client.query('begin');
        const heldId = randomUUID();
        const held = await insertRaw(client, `${s}-held`, heldId);
        const laterEvent = event();
        const later = store.append([{ stream: `${s}-later`, expected: 'no_stream', events: [laterEvent] }]);
        await waitForLockWaiters(handle.db, 1);

        // Nothing of either is readable: the held row is uncommitted and the later one not yet numbered.
        const whileHeld = await readUntil(store, before, [], 200);
        expect(ids(whileHeld.events, s)).toEqual([]);

        await client.query('commit');
        const appended = await later;
        expect(appended.position.globalPosition).toBeGreaterThan(held.globalPosition);
        const afterCommit = await readUntil(store, whileHeld.checkpoint, [heldId, laterEvent.id!]);
        expect(ids(afterCommit.events, s)).toEqual([heldId, laterEvent.id]);
      });
    },
  );

  it.skipIf(SERVER_ONLY)(
    'numbers events in commit order, with batches of two stores in flight: a reader that checkpoints after every page never skips one (needs a PostgreSQL server: PGlite has one connection)',
    async () => {
      const s = `commit-order-${randomUUID()}`;
      const stores = [new PostgresEventStore(handle.db, { pipelineFrom: 1 }), new PostgresEventStore(handle.db, { pipelineFrom: 1 })];
      let checkpoint = await headCheckpoint(store);
      const seen: StoredEvent[] = [];
      let writing = true;
      const writers = Promise.all(
        Array.from({ length: 8 }, (_, w) =>
          (async () => {
            for (let i = 0; i < 25; i++) {
              await stores[w % 2]!.append([{ stream: `${s}-${w}-${i}`, expected: 'no_stream', events: [event()] }]);
            }
          })(),
        ),
      ).finally(() => (writing = false));
      while (writing) {
        const page = await store.readAll(checkpoint, 3);
        seen.push(...page.events);
        checkpoint = page.checkpoint;
      }
      await writers;
      const rest = await readUntil(store, checkpoint, []);
      seen.push(...rest.events);
      const positions = seen.filter((e) => e.streamId.startsWith(s)).map((e) => e.position.globalPosition);
      expect(positions).toHaveLength(200);
      expect(new Set(positions).size).toBe(200);
      expect([...positions].sort(compare)).toEqual(positions);
    },
  );

  it.skipIf(SERVER_ONLY)(
    'keeps a stream in order when a multi-stream append took its transaction id before reaching that stream (needs a PostgreSQL server: PGlite has one connection)',
    async () => {
      const s = `order-${randomUUID()}`;
      const first = `${s}-a`; // sorts first, so the slow append writes here before it reaches `shared`
      const shared = `${s}-b`;
      await store.append([{ stream: first, expected: 'no_stream', events: [event()] }]);
      await store.append([{ stream: shared, expected: 'no_stream', events: [event()] }]);
      const slowEvent = event();
      const fastEvent = event();

      await withRawClient(handle.url!, async (client) => {
        // Hold `first`: the slow append takes its transaction id on it, then waits.
        await client.query('begin');
        await client.query('select version from streams where stream_id = $1 for update', [first]);
        const slow = store.append([
          { stream: first, expected: 0, events: [event()] },
          { stream: shared, expected: 'any', events: [slowEvent] },
        ]);
        await waitForLockWaiters(handle.db, 1);
        // Meanwhile a later transaction appends to `shared`: it commits first, unless the store makes
        // it wait for the slow append (either is fine, as long as readAll keeps the stream's order).
        // From another store instance (another process): appends of one instance queue behind its own batch in flight.
        const fast = new PostgresEventStore(handle.db).append([{ stream: shared, expected: 'any', events: [fastEvent] }]);
        const cancel = { cancelled: false };
        await Promise.race([fast, waitForLockWaiters(handle.db, 2, cancel)]).finally(() => (cancel.cancelled = true));
        await client.query('commit');
        await Promise.all([slow, fast]);
      });

      const stored = await store.readStream(shared);
      expect(new Set(stored.slice(1).map((e) => e.eventId))).toEqual(new Set([fastEvent.id, slowEvent.id]));
      const read = await readUntil(store, START, [fastEvent.id!, slowEvent.id!]);
      const readOrder = read.events.filter((e) => e.streamId === shared);
      expect(readOrder.map((e) => e.streamPosition)).toEqual([0, 1, 2]);
      expect(readOrder.map((e) => e.eventId)).toEqual(stored.map((e) => e.eventId));
    },
  );
});

function ids(events: StoredEvent[], prefix: string): string[] {
  return events.filter((e) => e.streamId.startsWith(prefix)).map((e) => e.eventId);
}

/** An event row written by hand inside the caller's open transaction, following the store's protocol (append lock first). */
async function insertRaw(client: pg.Client, stream: string, eventId: string): Promise<{ globalPosition: bigint }> {
  await client.query('insert into streams (stream_id, version) values ($1, 0)', [stream]);
  await client.query('select pg_advisory_xact_lock($1::bigint)', [APPEND_LOCK_KEY.toString()]);
  const { rows } = await client.query<{ global_position: string }>(
    `insert into events (stream_id, stream_position, event_id, type, data, metadata, recorded_at)
     values ($1, 0, $2, 'CommitOrderTested', '{}', $3, now()) returning global_position::text`,
    [stream, eventId, JSON.stringify(meta())],
  );
  return { globalPosition: BigInt(rows[0]!.global_position) };
}

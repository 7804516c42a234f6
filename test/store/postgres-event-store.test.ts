import { randomUUID } from 'node:crypto';
import { type Kysely, sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../../src/db/schema.js';
import type { EventMetadata } from '../../src/events/metadata.js';
import { type Checkpoint, type EventStore, type NewEvent, START, type StoredEvent } from '../../src/store/event-store.js';
import { APPEND_LOCK_KEY, PostgresEventStore } from '../../src/store/postgres-event-store.js';
import { openTestDatabase, STORE_KIND } from '../support/test-database.js';
import { eventStoreContract } from './event-store.contract.js';

eventStoreContract(STORE_KIND, async () => {
  const handle = await openTestDatabase();
  return { store: new PostgresEventStore(handle.db), close: () => handle.close() };
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
    'numbers events in commit order: a reader that checkpoints after every page never skips one (needs a PostgreSQL server: PGlite has one connection)',
    async () => {
      const s = `commit-order-${randomUUID()}`;
      let checkpoint = await headCheckpoint(store);
      const seen: StoredEvent[] = [];
      let writing = true;
      const writers = Promise.all(
        Array.from({ length: 8 }, (_, w) =>
          (async () => {
            for (let i = 0; i < 25; i++) {
              await store.append([{ stream: `${s}-${w}-${i}`, expected: 'no_stream', events: [event()] }]);
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

/**
 * Waits until `count` sessions of this database wait for a lock (the appends we are holding up).
 * Asked on a pooled connection: inside a transaction, pg_stat_activity is a frozen snapshot.
 */
async function waitForLockWaiters(db: Kysely<Database>, count: number, cancel = { cancelled: false }): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!cancel.cancelled) {
    const { rows } = await sql<{ waiting: number }>`select count(*)::int as waiting from pg_stat_activity
      where datname = current_database() and wait_event_type = 'Lock'`.execute(db);
    if (rows[0]!.waiting >= count) return;
    if (Date.now() > deadline) throw new Error(`fewer than ${count} appends ever waited for a lock`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

function event(): NewEvent {
  return { id: randomUUID(), type: 'CommitOrderTested', data: {}, metadata: meta() };
}

function meta(): EventMetadata {
  return {
    event_id: randomUUID(),
    event_version: 1,
    business_id: 'biz_store',
    recorded_at: new Date().toISOString(),
    actor: 'system',
    request_id: null,
    correlation_id: null,
    causation_id: null,
    idempotency_key: null,
  };
}

function compare(a: bigint, b: bigint): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function ids(events: StoredEvent[], prefix: string): string[] {
  return events.filter((e) => e.streamId.startsWith(prefix)).map((e) => e.eventId);
}

async function withRawClient(url: string, work: (client: pg.Client) => Promise<void>): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await work(client);
  } finally {
    await client.query('rollback').catch(() => {});
    await client.end();
  }
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

/**
 * Reads from `from` until every id in `wanted` was returned and a page comes back empty (a page
 * can be empty early while an unrelated transaction on the server is open, hence the deadline).
 */
async function readUntil(
  store: EventStore,
  from: Checkpoint,
  wanted: string[],
  minimumMs = 0,
): Promise<{ events: StoredEvent[]; checkpoint: Checkpoint }> {
  const missing = new Set(wanted);
  const events: StoredEvent[] = [];
  let checkpoint = from;
  const started = Date.now();
  const deadline = started + 15_000;
  for (;;) {
    const page = await store.readAll(checkpoint, 100);
    events.push(...page.events);
    page.events.forEach((e) => missing.delete(e.eventId));
    checkpoint = page.checkpoint;
    const done = missing.size === 0 && page.events.length === 0 && Date.now() - started >= minimumMs;
    if (done || Date.now() > deadline) return { events, checkpoint };
    if (page.events.length === 0) await new Promise((r) => setTimeout(r, 10));
  }
}

async function headCheckpoint(store: EventStore): Promise<Checkpoint> {
  let checkpoint = START;
  for (;;) {
    const page = await store.readAll(checkpoint, 1000);
    if (page.events.length === 0) return checkpoint;
    checkpoint = page.checkpoint;
  }
}

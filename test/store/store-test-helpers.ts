import { randomUUID } from 'node:crypto';
import { type Kysely, sql } from 'kysely';
import pg from 'pg';
import type { Database } from '../../src/db/schema.js';
import type { EventMetadata } from '../../src/events/metadata.js';
import { type Checkpoint, type EventStore, type NewEvent, START, type StoredEvent } from '../../src/store/event-store.js';

/**
 * Waits until `count` sessions of this database wait for a lock (the appends we are holding up).
 * Asked on a pooled connection: inside a transaction, pg_stat_activity is a frozen snapshot.
 */
export async function waitForLockWaiters(db: Kysely<Database>, count: number, cancel = { cancelled: false }): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!cancel.cancelled) {
    const { rows } = await sql<{ waiting: number }>`select count(*)::int as waiting from pg_stat_activity
      where datname = current_database() and wait_event_type = 'Lock'`.execute(db);
    if (rows[0]!.waiting >= count) return;
    if (Date.now() > deadline) throw new Error(`fewer than ${count} appends ever waited for a lock`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

export function event(): NewEvent {
  return { id: randomUUID(), type: 'CommitOrderTested', data: {}, metadata: meta() };
}

export function meta(businessId = 'biz_store'): EventMetadata {
  return {
    event_id: randomUUID(),
    event_version: 1,
    business_id: businessId,
    recorded_at: new Date().toISOString(),
    actor: 'system',
    request_id: null,
    correlation_id: null,
    causation_id: null,
    idempotency_key: null,
  };
}

export async function withRawClient(url: string, work: (client: pg.Client) => Promise<void>): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await work(client);
  } finally {
    await client.query('rollback').catch(() => {});
    await client.end();
  }
}


export function compare(a: bigint, b: bigint): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * Reads from `from` until every id in `wanted` was returned and a page comes back empty (a page
 * can be empty early while an unrelated transaction on the server is open, hence the deadline).
 */
export async function readUntil(
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

export async function headCheckpoint(store: EventStore): Promise<Checkpoint> {
  let checkpoint = START;
  for (;;) {
    const page = await store.readAll(checkpoint, 1000);
    if (page.events.length === 0) return checkpoint;
    checkpoint = page.checkpoint;
  }
}

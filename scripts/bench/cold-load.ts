/**
 * What a cold load costs: a customer's state read from PostgreSQL by a process that does not hold
 * it (every earn of a customer memory could not keep). `tsx scripts/bench/cold-load.ts [customers=2000] [rounds=4]`
 *
 * On a fresh database, `customers` customers get 30 earns each, half of them then 250 more (so they
 * have a snapshot at 200 and 80 events after it). Each round loads every customer with a new,
 * empty state cache, 16 loads at a time, twice: as the PostgreSQL store does (the snapshot and the
 * events after it in one statement, `readStreamFromSnapshot`) and as a store without that does (the
 * snapshot, then the events: two), alternating which goes first. Prints loads per second and the
 * CPU of this process and of PostgreSQL per load. COLD_LOAD_PROFILE=file writes a CPU profile of
 * the rounds (not of the seeding) there, and prints its heaviest functions.
 */
import { writeFile } from 'node:fs/promises';
import { Session } from 'node:inspector/promises';
import { loadAggregate, withMetadata } from '../../src/commands/aggregate.js';
import { customerDecider, type CustomerEvent, type CustomerState } from '../../src/commands/customer/customer-decider.js';
import { snapshotStore } from '../../src/commands/snapshot-store.js';
import { StateCache } from '../../src/commands/state-cache.js';
import { openDatabase } from '../../src/db/database.js';
import { migrateToLatest } from '../../src/db/migrations.js';
import { newId } from '../../src/ids.js';
import type { EventStore } from '../../src/store/event-store.js';
import { PostgresEventStore } from '../../src/store/postgres-event-store.js';
import { summarizeProfile } from './cpu-profile.js';
import { cpuDuring } from './cpu-time.js';
import { createDatabase, databaseUrl, dropDatabase } from './postgres.js';

const customers = Number(process.argv[2] ?? 2_000);
const rounds = Number(process.argv[3] ?? 4);
const CONCURRENCY = 16;
const ctx = { businessId: 'biz_cold', actor: 'bench', requestId: null, idempotencyKey: null, now: new Date() };

function earns(state: CustomerState, from: number, count: number): { events: CustomerEvent[]; state: CustomerState } {
  const events: CustomerEvent[] = [];
  for (let i = from; i < from + count; i++) {
    const command = { type: 'RecordPoints', pointsType: 'earn', transactionId: `txn_${i}`, amount: 1, applyMultiplier: false, description: null, reference: null, metadata: {}, tiers: [] } as const;
    for (const e of customerDecider.decide(command, state)) {
      state = customerDecider.evolve(state, e);
      events.push(e as CustomerEvent);
    }
  }
  return { events, state };
}

async function seed(store: PostgresEventStore): Promise<string[]> {
  const streams: string[] = [];
  for (let c = 0; c < customers; c++) {
    const id = `cust_${String(c).padStart(8, '0')}`;
    const stream = `customer-${id}`;
    const profile = { email: `${id}@example.com`, phone: null, first_name: null, last_name: null, external_reference: null, metadata: {} };
    let state = customerDecider.initialState();
    const registered = customerDecider.decide({ type: 'RegisterCustomer', customerId: id, businessId: ctx.businessId, profile }, state);
    for (const e of registered) state = customerDecider.evolve(state, e);
    const first = earns(state, 0, 30);
    await store.append([{ stream, expected: 'no_stream', events: withMetadata([...registered, ...first.events], ctx, newId) }]);
    if (c % 2 === 0) {
      const more = earns(first.state, 30, 250);
      await store.append([{ stream, expected: 30, events: withMetadata(more.events, ctx, newId) }]);
    }
    streams.push(stream);
  }
  return streams;
}

async function loadAll(store: Pick<EventStore, 'readStream' | 'readStreamFromSnapshot'>, cache: StateCache, streams: string[]): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < streams.length) await loadAggregate(store, streams[next++]!, customerDecider, cache);
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
}

async function main(): Promise<void> {
  const name = await createDatabase('coldload');
  const handle = await openDatabase({ databaseUrl: databaseUrl(name) });
  try {
    await migrateToLatest(handle.db);
    const store = new PostgresEventStore(handle.db);
    const snapshots = snapshotStore(handle.db);
    const streams = await seed(store);
    // The long histories' snapshots, at revision 200 as a serving process takes them (80 events after).
    for (const stream of streams.filter((_, i) => i % 2 === 0)) {
      const events = await store.readStream(stream, { max: 201 });
      const state = events.reduce((s, e) => customerDecider.evolve(s, { type: e.type, data: e.data, recordedAt: e.recordedAt } as never), customerDecider.initialState());
      await snapshots.put(stream, 200, state);
    }
    const apart: Pick<EventStore, 'readStream'> = { readStream: (s, o) => store.readStream(s, o) };
    const ways = { 'one statement': store, 'two statements': apart } as const;
    const results: Record<string, Array<{ perSecond: number; nodeUs: number; postgresUs: number }>> = { 'one statement': [], 'two statements': [] };
    await loadAll(store, new StateCache(50_000, snapshots), streams); // warm-up
    const profileFile = process.env.COLD_LOAD_PROFILE;
    const session = profileFile ? new Session() : undefined;
    if (session) {
      session.connect();
      await session.post('Profiler.enable');
      await session.post('Profiler.start');
    }
    for (let round = 0; round < rounds; round++) {
      const order = round % 2 === 0 ? (['one statement', 'two statements'] as const) : (['two statements', 'one statement'] as const);
      for (const way of order) {
        const started = performance.now();
        const { nodeMs, postgresMs } = await cpuDuring(process.pid, name, () => loadAll(ways[way], new StateCache(50_000, snapshots), streams));
        const seconds = (performance.now() - started) / 1000;
        results[way]!.push({ perSecond: streams.length / seconds, nodeUs: (nodeMs * 1000) / streams.length, postgresUs: (postgresMs * 1000) / streams.length });
      }
    }
    if (session && profileFile) {
      const { profile } = await session.post('Profiler.stop');
      session.disconnect();
      await writeFile(profileFile, JSON.stringify(profile));
      const summary = await summarizeProfile(profileFile, 20);
      console.log(['Self time, heaviest functions:', ...summary.functions.map((f) => `  ${(f.share * 100).toFixed(1).padStart(5)}%  ${f.name}`)].join('\n'));
    }
    for (const [way, runs] of Object.entries(results)) {
      const line = runs.map((r) => `${Math.round(r.perSecond)}/s (${r.nodeUs.toFixed(0)} + ${r.postgresUs.toFixed(0)} µs)`).join(', ');
      console.log(`${way}: ${line}   [loads/s (node + PostgreSQL CPU per load)]`);
    }
  } finally {
    await handle.close();
    await dropDatabase(name);
  }
}

await main();

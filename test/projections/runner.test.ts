import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { EventType } from '../../src/events/catalogue.js';
import { Projections } from '../../src/projections/projections.js';
import type { Projector } from '../../src/projections/projector.js';
import { ProjectionRunner, type RunnerOptions } from '../../src/projections/runner.js';
import { type AppendResult, type Checkpoint, compareCheckpoints, type NewEvent } from '../../src/store/event-store.js';
import { PostgresEventStore } from '../../src/store/postgres-event-store.js';
import { openTestDatabase, STORE_KIND } from '../support/test-database.js';
import { meta } from '../store/store-test-helpers.js';

type TestDatabase = Awaited<ReturnType<typeof openTestDatabase>>;

let handle: TestDatabase;
let store: PostgresEventStore;
const toStop: Array<{ stop(): Promise<void> }> = [];

beforeAll(async () => {
  handle = await openTestDatabase();
  store = new PostgresEventStore(handle.db);
});
afterEach(async () => {
  await Promise.all(toStop.splice(0).map((r) => r.stop()));
});
afterAll(() => handle?.close());

describe('projection runner', () => {
  it('applies events in batches of batchSize, each batch in one transaction that moves the checkpoint', async () => {
    const t = await testProjection();
    const runner = started(t.runner('a', { batchSize: 5, pollMs: 20 }));
    const marker = await t.atHead(runner);

    // One append, so the whole run becomes readable at once: batches are 5 + 5 + 3 events.
    const events = [...range(0, 12).map((n) => ev(n)), ev(12, 'CustomerUpdated')];
    const result = await store.append([{ stream: `${t.prefix}-batch`, expected: 'no_stream', events }]);
    expect(await runner.waitFor(result.position, 10_000)).toBe(true);

    const stored = await store.readStream(`${t.prefix}-batch`);
    const rows = (await t.rows()).filter((r) => r.n >= 0);
    expect(rows.map((r) => r.n)).toEqual(range(0, 12)); // the unhandled CustomerUpdated is skipped

    // Each batch committed in its own transaction...
    const txOf = (n: number) => rows.find((r) => r.n === n)!.tx;
    expect(new Set(range(0, 5).map(txOf)).size).toBe(1);
    expect(new Set(range(5, 10).map(txOf)).size).toBe(1);
    expect(new Set(range(10, 12).map(txOf)).size).toBe(1);
    expect(new Set([txOf(0), txOf(5), txOf(10)]).size).toBe(3);
    // ...and saw the checkpoint the previous batch committed.
    const gp = (n: number) => String(stored[n]!.position.globalPosition);
    expect(rows.map((r) => r.checkpointBefore)).toEqual([
      ...range(0, 5).map(() => String(marker.globalPosition)),
      ...range(5, 10).map(() => gp(4)),
      ...range(10, 12).map(() => gp(9)),
    ]);
    // The checkpoint ends on the last event read, though the projector did not handle it.
    expect(await t.checkpointRow()).toEqual(result.position);
    expect(runner.position).toEqual(result.position);
  });

  it('rolls back a failing batch with its checkpoint, retries, and finishes once the fault is gone', async () => {
    const t = await testProjection();
    const runner = started(t.runner('a', { batchSize: 5, pollMs: 20 }));
    await t.atHead(runner);
    t.fault.at = 7;

    const result = await store.append([
      { stream: `${t.prefix}-faulty`, expected: 'no_stream', events: range(0, 15).map((n) => ev(n)) },
    ]);
    const stored = await store.readStream(`${t.prefix}-faulty`);
    // The runner meets the fault, backs off, and meets it again.
    await vi.waitFor(() => expect(t.fault.hits).toBeGreaterThanOrEqual(2), { timeout: 10_000, interval: 20 });

    // Events 5 and 6 were applied inside the failing batch, then rolled back with it.
    expect(t.attempted.filter((n) => n === 5 || n === 6).length).toBeGreaterThanOrEqual(4);
    const rows = (await t.rows()).filter((r) => r.n >= 0);
    expect(rows.map((r) => r.n)).toEqual([0, 1, 2, 3, 4]);
    expect(await t.checkpointRow()).toEqual(stored[4]!.position);
    expect(runner.position).toEqual(stored[4]!.position);

    t.fault.at = null;
    expect(await runner.waitFor(result.position, 20_000)).toBe(true);
    const after = (await t.rows()).filter((r) => r.n >= 0);
    expect(after.map((r) => r.n)).toEqual(range(0, 15));
    expect(new Set(after.map((r) => r.eventId)).size).toBe(15);
    expect(await t.checkpointRow()).toEqual(result.position);
  });

  it('continues from the stored checkpoint after a restart without applying anything twice', async () => {
    const t = await testProjection();
    const first = started(t.runner('first', { batchSize: 4, pollMs: 20 }));
    let last: AppendResult | undefined;
    for (let n = 0; n < 10; n += 2) last = await appendMine(t, [ev(n), ev(n + 1)]);
    expect(await first.waitFor(last!.position, 10_000)).toBe(true);
    await first.stop();

    for (let n = 10; n < 16; n += 3) last = await appendMine(t, [ev(n), ev(n + 1), ev(n + 2)]);
    // A new process: its own store and runner, the same projector name and database.
    const second = started(
      new ProjectionRunner(handle.db, new PostgresEventStore(handle.db), t.projector('second'), { batchSize: 4, pollMs: 20 }),
    );
    expect(await second.waitFor(last!.position, 10_000)).toBe(true);

    const rows = await t.rows();
    expect(rows.map((r) => r.n)).toEqual(range(0, 16));
    expect(new Set(rows.map((r) => r.eventId)).size).toBe(16);
    expect(rows.filter((r) => r.appliedBy === 'first').map((r) => r.n)).toEqual(range(0, 10));
    expect(rows.filter((r) => r.appliedBy === 'second').map((r) => r.n)).toEqual(range(10, 16));
  });

  it('applies every event exactly once when two runners of the same projector run at the same time', async () => {
    const t = await testProjection();
    const a = started(t.runner('a', { batchSize: 3, pollMs: 5 }));
    const b = started(t.runner('b', { batchSize: 3, pollMs: 5 }));
    const unsubscribe = store.onAppended(() => {
      a.wake();
      b.wake();
    });
    try {
      const results = await Promise.all(
        range(0, 30).map((i) =>
          store.append([{ stream: `${t.prefix}-race-${i}`, expected: 'no_stream', events: [ev(2 * i), ev(2 * i + 1)] }]),
        ),
      );
      const last = results.map((r) => r.position).reduce((x, y) => (compareCheckpoints(x, y) >= 0 ? x : y));
      expect(await a.waitFor(last, 20_000)).toBe(true);
      expect(await b.waitFor(last, 20_000)).toBe(true);
    } finally {
      unsubscribe();
    }

    const rows = await t.rows();
    expect(rows.map((r) => r.n)).toEqual(range(0, 60));
    expect(new Set(rows.map((r) => r.eventId)).size).toBe(60);
    const stored = (await Promise.all(range(0, 30).map((i) => store.readStream(`${t.prefix}-race-${i}`)))).flat();
    expect(new Set(rows.map((r) => r.eventId))).toEqual(new Set(stored.map((e) => e.eventId)));
  });
});

describe('projection runner: several projectors, one read per batch', () => {
  it('gives a projector whose checkpoint went back only the events after it, while the others get nothing twice', async () => {
    const a = await testProjection();
    const b = await testProjection();
    // Appends alternating between a's and b's streams, so that any batch of the log holds some of both.
    const both = async (from: number, to: number) => {
      let last: AppendResult | undefined;
      for (const n of range(from, to)) {
        for (const t of [a, b]) last = await store.append([{ stream: `${t.prefix}-${n}`, expected: 'no_stream', events: [ev(n)] }]);
      }
      return last!;
    };
    const first = await both(0, 6);
    const group = started(new ProjectionRunner(handle.db, store, [a.projector('group'), b.projector('group')], { batchSize: 4, pollMs: 20 }));
    expect(await group.waitFor(first.position, 10_000)).toBe(true);
    expect((await a.rows()).map((r) => r.n)).toEqual(range(0, 6));
    expect((await b.rows()).map((r) => r.n)).toEqual(range(0, 6));
    // Both projectors were applied in the same transactions: one read, one transaction per batch.
    const aTx = new Set((await a.rows()).map((r) => r.tx));
    expect((await b.rows()).some((r) => aTx.has(r.tx))).toBe(true);

    // b goes back to the start of the log, as after an operator's reset, while the group runs.
    await sql`delete from ${sql.table(b.table)}`.execute(handle.db);
    await sql`update projection_checkpoints set global_position = 0 where name = ${b.name}`.execute(handle.db);
    const second = await both(6, 10);
    await vi.waitFor(async () => expect(await b.checkpointRow()).toEqual(second.position), { timeout: 20_000, interval: 20 });
    expect(await group.waitFor(second.position, 10_000)).toBe(true);

    // Every event once in each read model: a was not given again what it had.
    const aRows = await a.rows();
    const bRows = await b.rows();
    expect(aRows.map((r) => r.n)).toEqual(range(0, 10));
    expect(bRows.map((r) => r.n)).toEqual(range(0, 10));
    expect(new Set(aRows.map((r) => r.eventId)).size).toBe(10);
    expect(new Set(bRows.map((r) => r.eventId)).size).toBe(10);
    expect(await a.checkpointRow()).toEqual(second.position);
  });

  it('applies every event exactly once to each projector when two runner groups (two processes) share the database', async () => {
    const a = await testProjection();
    const b = await testProjection();
    const groups = ['g1', 'g2'].map((label) =>
      started(new ProjectionRunner(handle.db, new PostgresEventStore(handle.db), [a.projector(label), b.projector(label)], { batchSize: 3, pollMs: 5 })),
    );
    const unsubscribe = store.onAppended(() => groups.forEach((g) => g.wake()));
    try {
      const results = await Promise.all(
        range(0, 30).map((i) =>
          store.append([
            { stream: `${a.prefix}-race-${i}`, expected: 'no_stream', events: [ev(2 * i), ev(2 * i + 1)] },
            { stream: `${b.prefix}-race-${i}`, expected: 'no_stream', events: [ev(2 * i)] },
          ]),
        ),
      );
      const last = results.map((r) => r.position).reduce((x, y) => (compareCheckpoints(x, y) >= 0 ? x : y));
      for (const group of groups) expect(await group.waitFor(last, 20_000)).toBe(true);
    } finally {
      unsubscribe();
    }
    const aRows = await a.rows();
    const bRows = await b.rows();
    expect(aRows.map((r) => r.n)).toEqual(range(0, 60));
    expect(new Set(aRows.map((r) => r.eventId)).size).toBe(60);
    expect(bRows.map((r) => r.n)).toEqual(range(0, 30).map((i) => 2 * i));
    expect(new Set(bRows.map((r) => r.eventId)).size).toBe(30);
  });
});

describe('projection runner: waitFor', () => {
  it('resolves once the runner has applied an append, so the read model already holds it', async () => {
    const t = await testProjection();
    const runner = started(t.runner('a', { batchSize: 10, pollMs: 20 }));
    const result = await appendMine(t, [ev(0)]);
    expect(await runner.waitFor(result.position, 10_000)).toBe(true);
    expect((await t.rows()).map((r) => r.n)).toEqual([0]);
    // A position already passed resolves at once.
    expect(await runner.waitFor(result.position, 0)).toBe(true);
  });

  it('returns false on timeout while the runner is stopped, and resolves once it runs again', async () => {
    const t = await testProjection();
    const runner = t.runner('a', { batchSize: 10, pollMs: 20 });
    runner.start();
    await t.atHead(runner);
    await runner.stop();

    const result = await appendMine(t, [ev(0)]);
    expect(await runner.waitFor(result.position, 300)).toBe(false);
    expect(compareCheckpoints(runner.position, result.position)).toBeLessThan(0);
    expect((await t.rows()).filter((r) => r.n >= 0)).toEqual([]);

    started(runner);
    expect(await runner.waitFor(result.position, 10_000)).toBe(true);
    expect((await t.rows()).filter((r) => r.n >= 0).map((r) => r.n)).toEqual([0]);
  });
});

describe('projections: settle', () => {
  it('gives read-your-writes: each write is in the read model when settle returns', async () => {
    const t = await testProjection();
    // Slow polling: the append notification is what brings the runner, and settle must wait for it.
    const projections = started(new Projections(handle.db, store, [t.projector('p')], { pollMs: 1_000, settleTimeoutMs: 15_000 }));
    projections.start();
    for (let n = 0; n < 5; n++) {
      const result = await appendMine(t, [ev(n)]);
      await projections.settle(result.position);
      expect((await t.rows()).map((r) => r.n)).toEqual(range(0, n + 1));
    }
  });

  it('catches up before returning when no projection loop runs (the CLI)', async () => {
    const t = await testProjection();
    const projections = new Projections(handle.db, store, [t.projector('cli')], { batchSize: 4 });
    const result = await appendMine(t, range(0, 9).map((n) => ev(n)));
    await projections.settle(result.position);
    expect((await t.rows()).map((r) => r.n)).toEqual(range(0, 9));
    expect(await t.checkpointRow()).toEqual(result.position);
  });

  it.skipIf(STORE_KIND !== 'postgres')(
    'waits for a write that an unrelated open transaction still hides, with a running loop (needs a PostgreSQL server: PGlite has one connection)',
    async () => {
      const t = await testProjection();
      const projections = started(new Projections(handle.db, store, [t.projector('p')], { pollMs: 20, settleTimeoutMs: 15_000 }));
      projections.start();
      await settleBehindOpenTransaction(t, projections);
    },
  );

  it.skipIf(STORE_KIND !== 'postgres')(
    'waits for a write that an unrelated open transaction still hides, without a running loop (needs a PostgreSQL server: PGlite has one connection)',
    async () => {
      const t = await testProjection();
      const projections = new Projections(handle.db, store, [t.projector('cli')], { settleTimeoutMs: 15_000 });
      await settleBehindOpenTransaction(t, projections);
    },
  );
});

/**
 * Another session holds a transaction that started before our append: readAll cannot return our
 * event until it ends. The session commits 300 ms later; settle must still end with our write applied.
 */
async function settleBehindOpenTransaction(t: TestProjection, projections: Projections): Promise<void> {
  const client = new pg.Client({ connectionString: handle.url });
  await client.connect();
  try {
    await client.query('begin');
    await client.query('select pg_current_xact_id()');
    const result = await appendMine(t, [ev(0)]);
    const commit = new Promise((r) => setTimeout(r, 300)).then(() => client.query('commit'));
    await projections.settle(result.position);
    const rows = await t.rows();
    await commit;
    expect(rows.map((r) => r.n)).toEqual([0]);
  } finally {
    await client.query('rollback').catch(() => {});
    await client.end();
  }
}

interface SeenRow {
  eventId: string;
  n: number;
  tx: string;
  checkpointBefore: string;
  appliedBy: string;
}

interface TestProjection {
  name: string;
  table: string;
  /** Every stream of this projection starts with it; the projector ignores all other streams. */
  prefix: string;
  fault: { at: number | null; hits: number };
  /** `n` of every event handed to `apply`, including those of rolled-back batches. */
  attempted: number[];
  projector(label: string): Projector;
  runner(label: string, options: RunnerOptions): ProjectionRunner;
  rows(): Promise<SeenRow[]>;
  checkpointRow(): Promise<Checkpoint | undefined>;
  /** Appends a marker event (n = -1) and waits until the runner passed it: nothing else is ahead. */
  atHead(runner: ProjectionRunner): Promise<Checkpoint>;
}

/**
 * A projector of our own writing one row per `PointsEarned` event of its streams into a fresh
 * table, with the transaction and the checkpoint it saw. No unique key, so a double apply shows.
 */
async function testProjection(): Promise<TestProjection> {
  const id = randomUUID().replaceAll('-', '').slice(0, 12);
  const name = `test-seen-${id}`;
  const table = `seen_${id}`;
  const prefix = `seen${id}`;
  await sql`create table ${sql.table(table)} (
    event_id uuid not null, n int not null, tx text not null, checkpoint_before text not null, applied_by text not null
  )`.execute(handle.db);
  const t: TestProjection = {
    name,
    table,
    prefix,
    fault: { at: null, hits: 0 },
    attempted: [],
    projector: (label) => ({
      name,
      handles: new Set<EventType>(['PointsEarned']),
      tables: [table],
      async apply(event, trx) {
        if (!event.streamId.startsWith(prefix)) return;
        const n = event.data.n as number;
        t.attempted.push(n);
        if (t.fault.at === n) {
          t.fault.hits++;
          throw new Error(`injected fault at event ${n}`);
        }
        await sql`insert into ${sql.table(table)} (event_id, n, tx, checkpoint_before, applied_by)
          values (${event.eventId}, ${n}, pg_current_xact_id()::text,
            (select global_position::text from projection_checkpoints where name = ${name}), ${label})`.execute(trx);
      },
    }),
    runner: (label, options) => new ProjectionRunner(handle.db, store, t.projector(label), options),
    async rows() {
      const result = await sql<SeenRow>`select event_id as "eventId", n, tx, checkpoint_before as "checkpointBefore",
        applied_by as "appliedBy" from ${sql.table(table)} order by n, event_id`.execute(handle.db);
      return result.rows;
    },
    async checkpointRow() {
      const result = await sql<{ g: string }>`select global_position::text as g
        from projection_checkpoints where name = ${name}`.execute(handle.db);
      const row = result.rows[0];
      return row && { globalPosition: BigInt(row.g) };
    },
    async atHead(runner) {
      const marker = await store.append([{ stream: `${prefix}-marker`, expected: 'no_stream', events: [ev(-1)] }]);
      expect(await runner.waitFor(marker.position, 10_000)).toBe(true);
      expect(runner.position).toEqual(marker.position);
      return marker.position;
    },
  };
  return t;
}

function appendMine(t: TestProjection, events: NewEvent[]): Promise<AppendResult> {
  return store.append([{ stream: `${t.prefix}-${randomUUID().slice(0, 8)}`, expected: 'no_stream', events }]);
}

function started<T extends { stop(): Promise<void> }>(runner: T): T {
  toStop.push(runner);
  if (runner instanceof ProjectionRunner) runner.start();
  return runner;
}

function ev(n: number, type: EventType = 'PointsEarned'): NewEvent {
  return { id: randomUUID(), type, data: { n }, metadata: meta('biz_runner') };
}


function range(from: number, to: number): number[] {
  return Array.from({ length: to - from }, (_, i) => from + i);
}

import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChainVerifier } from '../../src/audit/verify-chain.js';
import {
  type AppendResult,
  type AppendWrite,
  DependencyFailed,
  type ExpectedRevision,
  type NewEvent,
  WrongExpectedVersion,
} from '../../src/store/event-store.js';
import { APPEND_LOCK_KEY, PostgresEventStore } from '../../src/store/postgres-event-store.js';
import { openTestDatabase, STORE_KIND } from '../support/test-database.js';
import { event, meta, waitForLockWaiters, withRawClient } from './store-test-helpers.js';

const SERVER_ONLY = STORE_KIND !== 'postgres';

describe(`postgres event store: group commit (${STORE_KIND})`, () => {
  let handle: Awaited<ReturnType<typeof openTestDatabase>>;
  let store: PostgresEventStore;
  const stream = (label: string) => `gc-${label}-${randomUUID().slice(0, 8)}`;

  beforeAll(async () => {
    handle = await openTestDatabase();
    store = new PostgresEventStore(handle.db);
  });
  afterAll(() => handle?.close());

  /**
   * Queues the appends back to back while a batch of the same store is claiming its streams, so
   * the next batch takes them all, in this order.
   */
  function together(appends: AppendWrite[][], on = store): Promise<PromiseSettledResult<AppendResult>[]> {
    return inOneBatch(() => appends.map((writes) => on.append(writes)), on);
  }

  /** As `together`, for the appends `queue` queues on `on`. */
  async function inOneBatch(queue: () => Array<Promise<AppendResult>>, on = store): Promise<PromiseSettledResult<AppendResult>[]> {
    const lead = on.append([{ stream: stream('lead'), expected: 'no_stream', events: [event()] }]);
    const results = Promise.allSettled(queue());
    await lead;
    return results;
  }

  /** The transaction each event was written in. */
  async function transactionsOf(events: NewEvent[]): Promise<Set<string>> {
    const { rows } = await sql<{ tx: string }>`select xmin::text as tx from events where event_id = any(${events.map((e) => e.id!)}::uuid[])`.execute(
      handle.db,
    );
    expect(rows).toHaveLength(events.length);
    return new Set(rows.map((r) => r.tx));
  }

  async function expectChainsIntact(streams: string[]): Promise<void> {
    const verifier = new ChainVerifier();
    for (const s of streams) for (const e of await store.readStream(s)) verifier.check(e);
    const { rows } = await sql<{ stream_id: string; version: number; last_hash: string }>`
      select stream_id, version, last_hash from streams where stream_id = any(${streams}::text[])`.execute(handle.db);
    verifier.checkHeads(rows.map((r) => ({ stream: r.stream_id, version: Number(r.version), lastHash: r.last_hash })));
    expect(verifier.breaks).toEqual([]);
  }

  const eventIds = async (s: string) => (await store.readStream(s)).map((e) => e.eventId);

  describe('several appends in one batch', () => {
    it('decides them in queue order: an append may expect the revision an earlier one of the batch produces', async () => {
      const s = stream('one');
      const [a, b, c, d] = [event(), event(), event(), event()];
      const results = await together([
        [{ stream: s, expected: 'no_stream', events: [a] }],
        [{ stream: s, expected: 0, events: [b, c] }],
        [{ stream: s, expected: 2, events: [d] }],
      ]);
      expect(results.map((r) => (r.status === 'fulfilled' ? r.value.revisions : r.reason))).toEqual([{ [s]: 0 }, { [s]: 2 }, { [s]: 3 }]);
      expect(await eventIds(s)).toEqual([a.id, b.id, c.id, d.id]);
      expect((await transactionsOf([a, b, c, d])).size).toBe(1);
      await expectChainsIntact([s]);
    });

    it('fails only the appends whose expectation does not hold at their turn, each with the revision the stream is at then', async () => {
      const s = stream('order');
      const [early, first, second] = [event(), event(), event()];
      const results = await together([
        [{ stream: s, expected: 0, events: [early] }],
        [{ stream: s, expected: 'no_stream', events: [first] }],
        [{ stream: s, expected: 'no_stream', events: [second] }],
      ]);
      expectWrongVersion(results[0]!, s, 0, 'no_stream');
      expect(results[1]).toMatchObject({ status: 'fulfilled', value: { revisions: { [s]: 0 } } });
      expectWrongVersion(results[2]!, s, 'no_stream', 0);
      expect(await eventIds(s)).toEqual([first.id]);
      await expectChainsIntact([s]);
    });

    it('keeps a failing append from touching the others of its batch, and from writing any of its own streams', async () => {
      const [s1, s2, t, u] = [stream('ok1'), stream('ok2'), stream('t'), stream('u')];
      await store.append([{ stream: u, expected: 'no_stream', events: [event()] }]);
      const [ok1, ok2, x, y] = [event(), event(), event(), event()];
      const results = await together([
        [{ stream: s1, expected: 'no_stream', events: [ok1] }],
        [
          { stream: t, expected: 'any', events: [x] },
          { stream: u, expected: 5, events: [y] },
        ],
        [{ stream: s2, expected: 'no_stream', events: [ok2] }],
      ]);
      expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
      expectWrongVersion(results[1]!, u, 5, 0);
      expect(await store.readStream(t)).toEqual([]);
      expect(await store.readStream(u)).toHaveLength(1);
      expect((await transactionsOf([ok1, ok2])).size).toBe(1);
      await expectChainsIntact([s1, s2, u]);
    });
  });

  describe('conditions (a write without events; the basics are in the contract)', () => {
    async function programAt(revision: number): Promise<string> {
      const p = stream('program');
      await store.append([{ stream: p, expected: 'no_stream', events: Array.from({ length: revision + 1 }, event) }]);
      return p;
    }

    it('is decided in queue order with writes of the same stream in the batch', async () => {
      const p = await programAt(0);
      const [c1, c2] = [stream('c1'), stream('c2')];
      const results = await together([
        [
          { stream: c1, expected: 'no_stream', events: [event()] },
          { stream: p, expected: 0, events: [] },
        ],
        [{ stream: p, expected: 0, events: [event()] }],
        [
          { stream: c2, expected: 'no_stream', events: [event()] },
          { stream: p, expected: 0, events: [] },
        ],
      ]);
      expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'rejected']);
      expectWrongVersion(results[2]!, p, 0, 1);
      expect(await store.readStream(c2)).toEqual([]);
    });

    it.skipIf(SERVER_ONLY)('holds at commit: a write to the stream that commits while the batch waits for it fails the condition (needs a server)', async () => {
      const [p, c] = [await programAt(0), stream('customer')];
      await withRawClient(handle.url!, async (client) => {
        // Another session moves the program, following the store's protocol, and is slow to commit.
        await client.query('begin');
        await client.query('update streams set version = 1 where stream_id = $1', [p]);
        // Its failure is taken at once: it may come before the commit below has been answered.
        const appended = store
          .append([
            { stream: c, expected: 'no_stream', events: [event()] },
            { stream: p, expected: 0, events: [] },
          ])
          .catch((e: unknown) => e);
        await waitForLockWaiters(handle.db, 1);
        await insertRawEvent(client, p, 1);
        await client.query('commit');
        const error = await appended;
        expectWrongVersion({ status: 'rejected', reason: error }, p, 0, 1);
      });
      expect(await store.readStream(c)).toEqual([]);
    });

    it.skipIf(SERVER_ONLY)('with no_stream, holds at commit: a stream created while the batch waits for the append lock fails it (needs a server)', async () => {
      const [p, c] = [stream('program'), stream('customer')];
      await withRawClient(handle.url!, async (client) => {
        // Another session holds the append lock, and creates the program before it commits.
        await client.query('begin');
        await client.query('select pg_advisory_xact_lock($1::bigint)', [APPEND_LOCK_KEY.toString()]);
        const appended = store
          .append([
            { stream: c, expected: 'no_stream', events: [event()] },
            { stream: p, expected: 'no_stream', events: [] },
          ])
          .catch((e: unknown) => e);
        await waitForLockWaiters(handle.db, 1);
        await client.query('insert into streams (stream_id, version) values ($1, 0)', [p]);
        await insertRawEvent(client, p, 0);
        await client.query('commit');
        const error = await appended;
        expectWrongVersion({ status: 'rejected', reason: error }, p, 'no_stream', 0);
      });
      expect(await store.readStream(c)).toEqual([]);
    });
  });

  it('stores data that is JSON null as JSON null', async () => {
    const s = stream('null-data');
    await store.append([{ stream: s, expected: 'no_stream', events: [{ ...event(), data: null }] }]);
    const [stored] = await store.readStream(s);
    expect(stored!.data).toBeNull();
    await expectChainsIntact([s]);
  });

  describe('successive batches', () => {
    it('decide appends of one stream in queue order even when a batch fails as a whole and is retried append by append', async () => {
      const small = new PostgresEventStore(handle.db, { maxBatch: 2, pipelineFrom: 1 });
      const taken = event();
      await small.append([{ stream: stream('taken'), expected: 'no_stream', events: [taken] }]);
      const s = stream('s');
      const [a, b] = [event(), event()];
      // The first batch takes [culprit, a], fails on the duplicate id and runs append by append;
      // b, queued after a and expecting it, would go in a second batch in flight meanwhile.
      const results = await Promise.allSettled([
        small.append([{ stream: stream('culprit'), expected: 'no_stream', events: [{ ...event(), id: taken.id! }] }]),
        small.append([{ stream: s, expected: 'no_stream', events: [a] }]),
        small.append([{ stream: s, expected: 0, events: [b] }]),
      ]);
      expect(results.map((r) => r.status)).toEqual(['rejected', 'fulfilled', 'fulfilled']);
      expect(results[0]).toMatchObject({ reason: { code: '23505' } });
      expect(await eventIds(s)).toEqual([a.id, b.id]);
      await expectChainsIntact([s]);
    });
  });

  describe('appends decided on other appends (after)', () => {
    /** A stream at revision 0, moved to 1 by another process (a second store): an append decided on revision 0 fails. */
    async function movedByAnotherProcess(): Promise<string> {
      const s = stream('after');
      await store.append([{ stream: s, expected: 'no_stream', events: [event()] }]);
      await new PostgresEventStore(handle.db).append([{ stream: s, expected: 0, events: [event()] }]);
      return s;
    }

    it('share a batch with the appends they were decided on', async () => {
      const s = stream('shared');
      const [a, b] = [event(), event()];
      const results = await inOneBatch(() => {
        const first = store.append([{ stream: s, expected: 'no_stream', events: [a] }]);
        return [first, store.append([{ stream: s, expected: 0, events: [b] }], { after: [first] })];
      });
      expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled']);
      expect((await transactionsOf([a, b])).size).toBe(1);
      expect(await eventIds(s)).toEqual([a.id, b.id]);
      await expectChainsIntact([s]);
    });

    it('fail in the batch where the one they were decided on fails, and the rest of the batch commits', async () => {
      const [s, t] = [await movedByAnotherProcess(), stream('bystander')];
      const before = await eventIds(s);
      const results = await inOneBatch(() => {
        const a = store.append([{ stream: s, expected: 0, events: [event()] }]);
        // Decided on a's state: its own expected revision is where the other process left the stream.
        const b = store.append([{ stream: s, expected: 1, events: [event()] }], { after: [a] });
        const c = store.append([{ stream: s, expected: 2, events: [event()] }], { after: [b] });
        return [a, b, c, store.append([{ stream: t, expected: 'no_stream', events: [event()] }])];
      });
      expectWrongVersion(results[0]!, s, 0, 1);
      expect(results.slice(1).map((r) => r.status)).toEqual(['rejected', 'rejected', 'fulfilled']);
      for (const r of results.slice(1, 3)) expect((r as PromiseRejectedResult).reason).toBeInstanceOf(DependencyFailed);
      expect(await eventIds(s)).toEqual(before);
      await expectChainsIntact([s, t]);
    });

    it('fail with the one they were decided on when a batch fails as a whole and is retried append by append', async () => {
      const taken = event();
      await store.append([{ stream: stream('taken'), expected: 'no_stream', events: [taken] }]);
      const [s, t] = [await movedByAnotherProcess(), stream('fresh')];
      const before = await eventIds(s);
      const [c, d] = [event(), event()];
      const results = await inOneBatch(() => {
        const a = store.append([{ stream: s, expected: 0, events: [event()] }]);
        const culprit = store.append([{ stream: stream('culprit'), expected: 'no_stream', events: [{ ...event(), id: taken.id! }] }]);
        const b = store.append([{ stream: s, expected: 1, events: [event()] }], { after: [a] });
        const first = store.append([{ stream: t, expected: 'no_stream', events: [c] }]);
        return [a, culprit, b, first, store.append([{ stream: t, expected: 0, events: [d] }], { after: [first] })];
      });
      expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected', 'rejected', 'fulfilled', 'fulfilled']);
      expect(results[1]).toMatchObject({ reason: { code: '23505' } });
      expect((results[2] as PromiseRejectedResult).reason).toBeInstanceOf(DependencyFailed);
      expect(await eventIds(s)).toEqual(before);
      expect(await eventIds(t)).toEqual([c.id, d.id]);
      await expectChainsIntact([s, t]);
    });
  });

  describe('two stores on one database (two processes)', () => {
    it('let exactly one of them create a stream both append to with no_stream', async () => {
      const other = new PostgresEventStore(handle.db);
      const streams: string[] = [];
      for (let round = 0; round < 20; round++) {
        const s = stream('race');
        streams.push(s);
        const [mine, theirs] = [event(), event()];
        // Each store's batch also carries appends of other streams.
        const side = (on: PostgresEventStore) =>
          Array.from({ length: 3 }, () => on.append([{ stream: stream('side'), expected: 'no_stream', events: [event()] }]));
        const results = await Promise.allSettled([
          store.append([{ stream: s, expected: 'no_stream', events: [mine] }]),
          other.append([{ stream: s, expected: 'no_stream', events: [theirs] }]),
          ...side(store),
          ...side(other),
        ]);
        const race = results.slice(0, 2);
        expect(race.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
        expectWrongVersion(race.find((r) => r.status === 'rejected')!, s, 'no_stream', 0);
        expect(results.slice(2).every((r) => r.status === 'fulfilled')).toBe(true);
        const winner = race[0]!.status === 'fulfilled' ? mine : theirs;
        expect(await eventIds(s)).toEqual([winner.id]);
      }
      await expectChainsIntact(streams);
    });

    it.skipIf(SERVER_ONLY)(
      'retry a batch when a stream it creates was created by the other after the batch read it: the no_stream append fails, the rest commit (needs a server)',
      async () => {
        const [s, bystander] = [stream('late-create'), stream('bystander')];
        const theirs = event();
        let results: PromiseSettledResult<AppendResult>[] = [];
        await withRawClient(handle.url!, async (client) => {
          await client.query('begin');
          await client.query('insert into streams (stream_id, version) values ($1, 0)', [s]);
          const appended = together([
            [{ stream: s, expected: 'no_stream', events: [event()] }],
            [{ stream: bystander, expected: 'no_stream', events: [event()] }],
          ]);
          await waitForLockWaiters(handle.db, 1); // the batch's insert of `s` waits for this session
          await insertRawEvent(client, s, 0, theirs.id);
          await client.query('commit');
          results = await appended;
        });
        expectWrongVersion(results[0]!, s, 'no_stream', 0);
        expect(results[1]).toMatchObject({ status: 'fulfilled', value: { revisions: { [bystander]: 0 } } });
        expect(await eventIds(s)).toEqual([theirs.id]);
      },
    );
  });

  it(
    'keeps every stream contiguous and chained under many concurrent appends from two stores, with conditions on a shared stream',
    async () => {
      // A second batch starts whenever one append waits, so batches really are in flight together.
      const stores = [new PostgresEventStore(handle.db, { pipelineFrom: 1 }), new PostgresEventStore(handle.db, { pipelineFrom: 1 })];
      const hot = Array.from({ length: 4 }, (_, i) => stream(`hot${i}`));
      const program = await (async () => {
        const p = stream('program');
        await store.append([{ stream: p, expected: 'no_stream', events: [event()] }]);
        return p;
      })();
      let programRevision = 0;
      const own: string[] = [];
      let conditionFailures = 0;

      async function writer(w: number): Promise<void> {
        const on = stores[w % 2]!;
        const mine = stream(`own${w}`);
        own.push(mine);
        let revision: ExpectedRevision = 'no_stream';
        for (let i = 0; i < 12; i++) {
          // Writers out of step, as requests are: appends keep arriving while batches commit.
          await new Promise((r) => setTimeout(r, (w * 7 + i * 3) % 4));
          if (w === 0 && i % 3 === 0) {
            // The program moves now and then; conditions decided on the old revision must fail.
            programRevision = (await on.append([{ stream: program, expected: programRevision, events: [event()] }])).revisions[program]!;
            continue;
          }
          const h = hot[(w + i) % hot.length]!;
          const seen = programRevision;
          try {
            const result = await on.append([
              { stream: mine, expected: revision, events: [event()] },
              { stream: h, expected: 'any', events: [event(), event()] },
              { stream: program, expected: seen, events: [] },
            ]);
            revision = result.revisions[mine]!;
          } catch (error) {
            if (!(error instanceof WrongExpectedVersion) || error.stream !== program) throw error;
            expect(error.actual).not.toBe(seen);
            conditionFailures++;
          }
        }
      }
      await Promise.all(Array.from({ length: 48 }, (_, w) => writer(w)));

      for (const s of [...hot, ...own, program]) {
        const positions = (await store.readStream(s)).map((e) => e.streamPosition);
        expect(positions, s).toEqual(positions.map((_, i) => i));
      }
      const ownEvents = (await Promise.all(own.map((s) => store.readStream(s)))).flat().length;
      const hotEvents = (await Promise.all(hot.map((s) => store.readStream(s)))).flat().length;
      expect(hotEvents).toBe(2 * ownEvents);
      expect(ownEvents + conditionFailures).toBe(47 * 12 + 8);
      expect(await store.readStream(program)).toHaveLength(1 + 4);
      await expectChainsIntact([...hot, ...own, program]);
    },
    60_000,
  );
});

function expectWrongVersion(result: PromiseSettledResult<unknown>, stream: string, expected: ExpectedRevision, actual: number | 'no_stream'): void {
  expect(result.status).toBe('rejected');
  const error = (result as PromiseRejectedResult).reason;
  expect(error).toBeInstanceOf(WrongExpectedVersion);
  expect({ stream: error.stream, expected: error.expected, actual: error.actual }).toEqual({ stream, expected, actual });
}

/** An event written by hand in the caller's open transaction, under the append lock as the store's protocol says. */
async function insertRawEvent(client: import('pg').Client, stream: string, position: number, id: string = randomUUID()): Promise<void> {
  await client.query('select pg_advisory_xact_lock($1::bigint)', [APPEND_LOCK_KEY.toString()]);
  await client.query(
    `insert into events (stream_id, stream_position, event_id, type, data, metadata, recorded_at)
     values ($1, $2, $3, 'GroupCommitTested', '{}', $4, now())`,
    [stream, position, id, JSON.stringify(meta())],
  );
}

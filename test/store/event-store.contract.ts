import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { eventHash, GENESIS_HASH } from '../../src/store/hash-chain.js';
import type { EventMetadata } from '../../src/events/metadata.js';
import {
  type AppendResult,
  type AppendWrite,
  type Checkpoint,
  compareCheckpoints,
  DependencyFailed,
  type EventStore,
  type ExpectedRevision,
  type NewEvent,
  START,
  type ProjectionSourceEvent,
  type StoredEvent,
  WrongExpectedVersion,
} from '../../src/store/event-store.js';
import { appendedByAttempt } from '../../src/commands/earlier-attempt.js';
import { meta } from './store-test-helpers.js';

/** What an adapter's test file hands the contract: a store on a fresh, empty backend. */
export interface OpenedEventStore {
  store: EventStore;
  close(): Promise<void>;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * The behaviour every `EventStore` adapter must show. Written once; each adapter's test file runs it.
 *
 * @example
 * eventStoreContract('pglite', async () => {
 *   const handle = await openTestDatabase();
 *   return { store: new PostgresEventStore(handle.db), close: () => handle.close() };
 * });
 */
export function eventStoreContract(name: string, open: () => Promise<OpenedEventStore>): void {
  describe(`event store contract: ${name}`, () => {
    let opened: OpenedEventStore;
    let store: EventStore;
    // Every stream of this run starts with `run`, so readAll checks can ignore anything else the
    // backend holds (other suites' events, a server's system streams).
    const run = `contract${randomUUID().slice(0, 8)}`;
    const stream = (label: string) => `${run}-${label}-${randomUUID().slice(0, 8)}`;

    beforeAll(async () => {
      opened = await open();
      store = opened.store;
    });
    afterAll(() => opened?.close());

    describe('expected revisions', () => {
      it('starts a new stream at revision 0 when appending with no_stream', async () => {
        const s = stream('new');
        const result = await store.append([{ stream: s, expected: 'no_stream', events: [event(0), event(1)] }]);
        expect(result.revisions).toEqual({ [s]: 1 });
        const events = await store.readStream(s);
        expect(events.map((e) => e.streamPosition)).toEqual([0, 1]);
        expect(events.map((e) => e.data)).toEqual([{ n: 0 }, { n: 1 }]);
        expect(events.every((e) => e.streamId === s)).toBe(true);
      });

      it('rejects no_stream on a stream that exists with WrongExpectedVersion naming stream, expected and actual', async () => {
        const s = stream('exists');
        await store.append([{ stream: s, expected: 'no_stream', events: [event(0), event(1)] }]);
        const error = await failure(store.append([{ stream: s, expected: 'no_stream', events: [event(2)] }]));
        expectWrongVersion(error, s, 'no_stream', 1);
        expect(await numbers(s)).toEqual([0, 1]);
      });

      it('appends with the current revision and rejects a stale one without writing anything', async () => {
        const s = stream('numeric');
        await store.append([{ stream: s, expected: 'no_stream', events: [event(0), event(1)] }]);
        const ok = await store.append([{ stream: s, expected: 1, events: [event(2), event(3)] }]);
        expect(ok.revisions).toEqual({ [s]: 3 });

        const stale = await failure(store.append([{ stream: s, expected: 1, events: [event(99)] }]));
        expectWrongVersion(stale, s, 1, 3);
        const ahead = await failure(store.append([{ stream: s, expected: 7, events: [event(98)] }]));
        expectWrongVersion(ahead, s, 7, 3);
        expect(await numbers(s)).toEqual([0, 1, 2, 3]);

        const next = await store.append([{ stream: s, expected: 3, events: [event(4)] }]);
        expect(next.revisions).toEqual({ [s]: 4 });
        expect((await store.readStream(s)).map((e) => e.streamPosition)).toEqual([0, 1, 2, 3, 4]);
      });

      it('rejects a numeric revision on a stream that does not exist', async () => {
        const s = stream('missing');
        const error = await failure(store.append([{ stream: s, expected: 0, events: [event(0)] }]));
        expectWrongVersion(error, s, 0, 'no_stream');
        expect(await store.readStream(s)).toEqual([]);
        // Nothing was left behind: the stream can still be created.
        await store.append([{ stream: s, expected: 'no_stream', events: [event(1)] }]);
        expect(await numbers(s)).toEqual([1]);
      });

      it('appends with any whether or not the stream exists, continuing its revisions', async () => {
        const s = stream('any');
        const first = await store.append([{ stream: s, expected: 'any', events: [event(0), event(1)] }]);
        expect(first.revisions).toEqual({ [s]: 1 });
        const second = await store.append([{ stream: s, expected: 'any', events: [event(2)] }]);
        expect(second.revisions).toEqual({ [s]: 2 });
        await store.append([{ stream: s, expected: 2, events: [event(3)] }]);
        const events = await store.readStream(s);
        expect(events.map((e) => e.streamPosition)).toEqual([0, 1, 2, 3]);
        expect(events.map((e) => e.data.n)).toEqual([0, 1, 2, 3]);
      });
    });

    describe('multi-stream appends', () => {
      it('writes to several streams in one append and reports each new revision', async () => {
        const a = stream('multi-a');
        const b = stream('multi-b');
        await store.append([{ stream: b, expected: 'no_stream', events: [event(0)] }]);
        const result = await store.append([
          { stream: a, expected: 'no_stream', events: [event(10), event(11)] },
          { stream: b, expected: 0, events: [event(1)] },
        ]);
        expect(result.revisions).toEqual({ [a]: 1, [b]: 1 });
        expect(await numbers(a)).toEqual([10, 11]);
        expect(await numbers(b)).toEqual([0, 1]);
      });

      it('writes none of the streams when one expectation fails, wherever that write sits in the list', async () => {
        // Stream names sort so that good writes come both before and after the failing one.
        const base = stream('atomic');
        const before = `${base}-a`;
        const failing = `${base}-m`;
        const after = `${base}-z`;
        const existingAfter = `${base}-zz`;
        await store.append([{ stream: failing, expected: 'no_stream', events: [event(0)] }]);
        await store.append([{ stream: existingAfter, expected: 'no_stream', events: [event(0)] }]);

        const doomed = [event(1), event(2), event(3), event(4)];
        const writes: AppendWrite[][] = [
          [
            { stream: before, expected: 'no_stream', events: [doomed[0]!] },
            { stream: failing, expected: 5, events: [doomed[1]!] },
            { stream: after, expected: 'any', events: [doomed[2]!] },
            { stream: existingAfter, expected: 0, events: [doomed[3]!] },
          ],
        ];
        // The same writes in reverse order: the failing check may be met first or last.
        writes.push([...writes[0]!].reverse());
        for (const batch of writes) {
          const error = await failure(store.append(batch));
          expectWrongVersion(error, failing, 5, 0);
          expect(await store.readStream(before)).toEqual([]);
          expect(await store.readStream(after)).toEqual([]);
          expect(await numbers(failing)).toEqual([0]);
          expect(await numbers(existingAfter)).toEqual([0]);
        }

        // No revision moved: the original expectations still hold, and the rolled-back ids are free.
        const retried = await store.append([
          { stream: before, expected: 'no_stream', events: [doomed[0]!] },
          { stream: failing, expected: 0, events: [doomed[1]!] },
          { stream: after, expected: 'no_stream', events: [doomed[2]!] },
          { stream: existingAfter, expected: 0, events: [doomed[3]!] },
        ]);
        expect(retried.revisions).toEqual({ [before]: 0, [failing]: 1, [after]: 0, [existingAfter]: 1 });
        expect((await store.readStream(failing)).map((e) => e.eventId)).toEqual([expect.any(String), doomed[1]!.id]);
      });
    });

    describe('conditions (a write without events)', () => {
      async function programAt(revision: number): Promise<string> {
        const p = stream('program');
        await store.append([{ stream: p, expected: 'no_stream', events: Array.from({ length: revision + 1 }, (_, n) => event(n)) }]);
        return p;
      }

      it('lets the append through when the stream is at the expected revision, and leaves that stream as it was', async () => {
        const [p, c] = [await programAt(1), stream('customer')];
        const result = await store.append([
          { stream: c, expected: 'no_stream', events: [event(0)] },
          { stream: p, expected: 1, events: [] },
        ]);
        expect(result.revisions).toEqual({ [c]: 0 });
        expect(await numbers(p)).toEqual([0, 1]);
        expect(await numbers(c)).toEqual([0]);
      });

      it('fails the append when the stream is at another revision, naming the revision it is at, and writes nothing', async () => {
        const [p, c] = [await programAt(1), stream('customer')];
        const error = await failure(
          store.append([
            { stream: c, expected: 'no_stream', events: [event(0)] },
            { stream: p, expected: 0, events: [] },
          ]),
        );
        expectWrongVersion(error, p, 0, 1);
        expect(await store.readStream(c)).toEqual([]);
        expect(await numbers(p)).toEqual([0, 1]);
      });

      it('with no_stream, holds while the stream does not exist (and does not create it), and fails once it does', async () => {
        const [absent, present, c] = [stream('absent'), await programAt(0), stream('customer')];
        await store.append([
          { stream: c, expected: 'no_stream', events: [event(0)] },
          { stream: absent, expected: 'no_stream', events: [] },
        ]);
        expect(await store.readStream(absent)).toEqual([]);
        // Still no stream: another no_stream append creates it.
        await store.append([{ stream: absent, expected: 'no_stream', events: [event(0)] }]);
        expectWrongVersion(await failure(store.append([{ stream: present, expected: 'no_stream', events: [] }])), present, 'no_stream', 0);
      });

      it('answers an append of conditions only with no revisions at START, and writes nothing', async () => {
        const p = await programAt(2);
        expect(await store.append([{ stream: p, expected: 2, events: [] }])).toEqual({ revisions: {}, position: START });
        expectWrongVersion(await failure(store.append([{ stream: p, expected: 1, events: [] }])), p, 1, 2);
        expect(await numbers(p)).toEqual([0, 1, 2]);
      });

      it('checks nothing and writes nothing for a write without events and with any', async () => {
        const [p, c] = [stream('nothing'), stream('customer')];
        const result = await store.append([
          { stream: c, expected: 'no_stream', events: [event(0)] },
          { stream: p, expected: 'any', events: [] },
        ]);
        expect(result.revisions).toEqual({ [c]: 0 });
        expect(await store.readStream(p)).toEqual([]);
      });
    });

    describe('appends decided on other appends (after)', () => {
      /** A stream at revision 0 that another writer moved to 1 after `mine` was decided on revision 0. */
      async function movedBehind(): Promise<string> {
        const s = stream('after');
        await store.append([{ stream: s, expected: 'no_stream', events: [event(0)] }]);
        await store.append([{ stream: s, expected: 0, events: [event(1)] }]);
        return s;
      }

      it('fails one decided on an append that fails, though its own expected revision is where the stream is', async () => {
        const s = await movedBehind();
        const a = store.append([{ stream: s, expected: 0, events: [event(10)] }]);
        const b = store.append([{ stream: s, expected: 1, events: [event(11)] }], { after: [a] });
        expectWrongVersion(await failure(a), s, 0, 1);
        const error = await failure(b);
        expect(error).toBeInstanceOf(DependencyFailed);
        expect(error).toBeInstanceOf(WrongExpectedVersion);
        expect(await numbers(s)).toEqual([0, 1]);
      });

      it('fails one decided on an append that had already failed', async () => {
        const s = await movedBehind();
        const a = store.append([{ stream: s, expected: 0, events: [event(10)] }]);
        await failure(a);
        expect(await failure(store.append([{ stream: s, expected: 1, events: [event(11)] }], { after: [a] }))).toBeInstanceOf(DependencyFailed);
        expect(await numbers(s)).toEqual([0, 1]);
      });

      it('appends one decided on appends that succeed, queued or already committed', async () => {
        const s = await movedBehind();
        const a = store.append([{ stream: s, expected: 1, events: [event(2)] }]);
        const b = store.append([{ stream: s, expected: 2, events: [event(3)] }], { after: [a] });
        expect((await b).revisions).toEqual({ [s]: 3 });
        const c = await store.append([{ stream: s, expected: 3, events: [event(4)] }], { after: [a, b] });
        expect(c.revisions).toEqual({ [s]: 4 });
        expect(await numbers(s)).toEqual([0, 1, 2, 3, 4]);
      });
    });

    describe('readStream', () => {
      let s: string;
      beforeAll(async () => {
        s = stream('read');
        await store.append([{ stream: s, expected: 'no_stream', events: [event(0), event(1), event(2)] }]);
        await store.append([{ stream: s, expected: 2, events: [event(3), event(4), event(5), event(6)] }]);
        await store.append([{ stream: s, expected: 6, events: [event(7), event(8), event(9)] }]);
      });

      it('reads forwards from the first revision', async () => {
        const events = await store.readStream(s);
        expect(events.map((e) => e.streamPosition)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
        expect(events.map((e) => e.data.n)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
      });

      it('reads backwards from the last revision', async () => {
        expect(await positions(s, { backwards: true })).toEqual([9, 8, 7, 6, 5, 4, 3, 2, 1, 0]);
      });

      it('reads from a revision, forwards and backwards, inclusive', async () => {
        expect(await positions(s, { from: 4 })).toEqual([4, 5, 6, 7, 8, 9]);
        expect(await positions(s, { from: 4, backwards: true })).toEqual([4, 3, 2, 1, 0]);
        expect(await positions(s, { from: 9 })).toEqual([9]);
        expect(await positions(s, { from: 10 })).toEqual([]);
      });

      it('limits the number of events with max', async () => {
        expect(await positions(s, { max: 3 })).toEqual([0, 1, 2]);
        expect(await positions(s, { from: 4, max: 3 })).toEqual([4, 5, 6]);
        expect(await positions(s, { backwards: true, max: 3 })).toEqual([9, 8, 7]);
        expect(await positions(s, { from: 4, backwards: true, max: 2 })).toEqual([4, 3]);
        expect(await positions(s, { from: 8, max: 5 })).toEqual([8, 9]);
      });

      it('returns nothing for a stream that does not exist', async () => {
        expect(await store.readStream(stream('never'))).toEqual([]);
        expect(await store.readStream(stream('never'), { backwards: true })).toEqual([]);
      });
    });

    describe('answers: stored with the append, or found in the log afterwards', () => {
      it('asks for an append\'s receipt inside the append exactly when it stores answers in the append\'s transaction', async () => {
        const s = stream('receipt');
        let asked = 0;
        const receipt = () => {
          asked++;
          return undefined;
        };
        await store.append([{ stream: s, expected: 'no_stream', events: [event(0)] }], { receipt });
        expect(asked > 0).toBe(store.transactionalReceipts);
        expect(await positions(s, {})).toEqual([0]);
      });

      it('finds the events an attempt appended under its business\'s Idempotency-Key, reading its streams back from the end, pages deep', async () => {
        const claimedAt = new Date(Date.now() - 1_000);
        const keyed = (n: number, businessId: string, key: string | null, at: Date): NewEvent => ({
          ...event(n),
          metadata: { ...meta(businessId), idempotency_key: key, recorded_at: at.toISOString() },
        });
        const a = stream('attempt-a');
        const b = stream('attempt-b');
        const untouched = stream('attempt-c');
        // An earlier use of the key, a day before the claim (a record is reused once 24 hours old).
        await store.append([{ stream: a, expected: 'no_stream', events: [keyed(0, 'biz_contract', 'order-7', new Date(claimedAt.getTime() - 86_400_000))] }]);
        // The same key of another business, then the attempt's own append to two streams at once.
        await store.append([{ stream: a, expected: 0, events: [keyed(1, 'biz_other', 'order-7', claimedAt)] }]);
        const attempt = await store.append([
          { stream: a, expected: 1, events: [keyed(2, 'biz_contract', 'order-7', claimedAt), keyed(3, 'biz_contract', 'order-7', claimedAt)] },
          { stream: b, expected: 'no_stream', events: [keyed(4, 'biz_contract', 'order-7', claimedAt)] },
        ]);
        // Then more than a page of other writes to the stream.
        for (let i = 0; i < 3; i++) {
          await store.append([{ stream: a, expected: 'any', events: Array.from({ length: 50 }, (_, k) => keyed(10 + 50 * i + k, 'biz_contract', `other-${k}`, new Date())) }]);
        }

        const found = await appendedByAttempt(store, [a, b, untouched], { businessId: 'biz_contract', idempotencyKey: 'order-7', claimedAt });
        expect(found?.writes.map((w) => ({ stream: w.stream, n: w.events.map((e) => (e.data as { n: number }).n) }))).toEqual([
          { stream: a, n: [2, 3] },
          { stream: b, n: [4] },
        ]);
        expect(found!.writes[0]!.events[0]!.metadata.idempotency_key).toBe('order-7');
        expect(compareCheckpoints(found!.position, attempt.position)).toBe(0); // where its last event sits

        expect(await appendedByAttempt(store, [a, b], { businessId: 'biz_contract', idempotencyKey: 'order-8', claimedAt })).toBeNull();
        expect(await appendedByAttempt(store, [a, b], { businessId: 'biz_elsewhere', idempotencyKey: 'order-7', claimedAt })).toBeNull();
        expect(await appendedByAttempt(store, [untouched], { businessId: 'biz_contract', idempotencyKey: 'order-7', claimedAt })).toBeNull();
      });
    });

    describe('events as stored', () => {
      it('keeps given event ids and assigns distinct UUIDs to events without one', async () => {
        const s = stream('ids');
        const given = randomUUID();
        const { id: _drop1, ...anonymous1 } = event(1);
        const { id: _drop2, ...anonymous2 } = event(2);
        await store.append([{ stream: s, expected: 'no_stream', events: [{ ...event(0), id: given }, anonymous1, anonymous2] }]);
        const [first, second, third] = await store.readStream(s);
        expect(first!.eventId).toBe(given);
        expect(second!.eventId).toMatch(UUID);
        expect(third!.eventId).toMatch(UUID);
        expect(new Set([first!.eventId, second!.eventId, third!.eventId]).size).toBe(3);
      });

      it('returns data and metadata exactly as written', async () => {
        const s = stream('roundtrip');
        const data = {
          text: 'Grüße, 日本語, emoji 🎉, "quotes", back\\slash, new\nline, tab\t',
          empty: '',
          numbers: [0, -1, 1.5, 1e-7, 123456789.25, Number.MAX_SAFE_INTEGER, -Number.MAX_SAFE_INTEGER],
          flags: { yes: true, no: false, nothing: null },
          nested: { deeper: { deepest: [[], {}, [{ a: [1, { b: 'c' }] }]] } },
          'key with spaces.and.dots': 'ok',
        };
        const metadata: EventMetadata = {
          ...meta('biz_contract'),
          actor: 'key_abc',
          request_id: 'req-1',
          correlation_id: randomUUID(),
          causation_id: null,
          idempotency_key: 'idem 1',
          recorded_at: '2025-03-04T05:06:07.089Z',
        };
        const arrayData = [1, 'two', { three: 3 }, null];
        const written = [
          { id: randomUUID(), type: 'RoundTripped', data, metadata },
          { id: randomUUID(), type: 'ArrayCarried', data: arrayData, metadata: meta('biz_contract') },
        ];
        await store.append([{ stream: s, expected: 'no_stream', events: written }]);
        const read = await store.readStream(s);
        expect(read).toHaveLength(2);
        for (const [i, e] of read.entries()) {
          expect(e.eventId).toBe(written[i]!.id);
          expect(e.type).toBe(written[i]!.type);
          expect(e.data).toStrictEqual(written[i]!.data);
          const { prev_hash, hash, ...rest } = e.metadata;
          expect(rest).toStrictEqual(written[i]!.metadata);
          expect(prev_hash).toMatch(/^[0-9a-f]{64}$/);
          expect(hash).toMatch(/^[0-9a-f]{64}$/);
          expect(e.recordedAt).toBeInstanceOf(Date);
          expect(e.recordedAt.toISOString()).toBe(written[i]!.metadata.recorded_at);
        }
        // readAll returns the same event as readStream.
        const fromAll = (await readAllUntil(store, START, 50, [written[0]!.id, written[1]!.id])).filter((e) => e.streamId === s);
        expect(fromAll).toStrictEqual(read);
      });

      it('chains every event of a stream to the one before it by hash, across appends, so an edit anywhere shows', async () => {
        const s1 = stream('chained');
        const s2 = stream('chained-other');
        await store.append([{ stream: s1, expected: 'no_stream', events: [typed('C0'), typed('C1')] }]);
        await store.append([
          { stream: s1, expected: 1, events: [typed('C2')] },
          { stream: s2, expected: 'no_stream', events: [typed('D0')] },
        ]);
        await store.append([{ stream: s1, expected: 'any', events: [typed('C3')] }]);
        for (const name of [s1, s2]) {
          const events = await store.readStream(name);
          let prev = GENESIS_HASH;
          for (const e of events) {
            expect(e.metadata.prev_hash).toBe(prev);
            const fields = { stream_id: e.streamId, stream_position: e.streamPosition, event_id: e.eventId, type: e.type, data: e.data, metadata: e.metadata as unknown as Record<string, unknown> };
            expect(e.metadata.hash).toBe(eventHash(prev, fields));
            // Any change to what was recorded gives another hash.
            expect(eventHash(prev, { ...fields, data: { ...(e.data as object), tampered: true } })).not.toBe(e.metadata.hash);
            prev = e.metadata.hash!;
          }
        }
        expect((await store.readStream(s1)).map((e) => e.type)).toEqual(['C0', 'C1', 'C2', 'C3']);
      });
    });

    describe('readAll', () => {
      it('reads every event once in small pages, in an order that keeps each stream in order', async () => {
        const [a, b, c] = [stream('all-a'), stream('all-b'), stream('all-c')];
        const results: Committed[] = [];
        const append = async (writes: AppendWrite[]) => results.push(committedAs(await store.append(writes), writes));
        await append([{ stream: a, expected: 'no_stream', events: [event(0), event(1)] }]);
        await append([{ stream: b, expected: 'no_stream', events: [event(0)] }]);
        await append([{ stream: a, expected: 1, events: [event(2)] }]);
        await append([
          { stream: c, expected: 'no_stream', events: [event(0), event(1), event(2)] },
          { stream: b, expected: 0, events: [event(1), event(2)] },
        ]);
        await append([{ stream: a, expected: 'any', events: [event(3), event(4)] }]);
        await append([{ stream: c, expected: 2, events: [event(3)] }]);

        const mine = new Map<string, StoredEvent[]>();
        for (const s of [a, b, c]) mine.set(s, await store.readStream(s));
        const expectedIds = [...mine.values()].flat().map((e) => e.eventId);

        const pages: Array<{ after: Checkpoint; events: StoredEvent[]; checkpoint: Checkpoint }> = [];
        const seen = await readAllUntil(store, START, 3, expectedIds, (page) => pages.push(page));

        // Pages are bounded, strictly after the checkpoint they were asked for, and return the
        // position of their last event as the next checkpoint.
        for (const page of pages) {
          expect(page.events.length).toBeLessThanOrEqual(3);
          if (page.events.length > 0) {
            expect(compareCheckpoints(page.events[0]!.position, page.after)).toBeGreaterThan(0);
            expect(page.checkpoint).toEqual(page.events.at(-1)!.position);
          }
        }
        expectStrictlyIncreasing(seen);
        expect(duplicates(seen.map((e) => e.eventId))).toEqual([]);

        const ours = seen.filter((e) => [a, b, c].includes(e.streamId));
        expect(ours.map((e) => e.eventId).sort()).toEqual([...expectedIds].sort());
        for (const s of [a, b, c]) {
          expect(ours.filter((e) => e.streamId === s)).toStrictEqual(mine.get(s));
        }
        // An append's result position is the position of its last event, and later appends sort later.
        expectPositionsReported(results, seen);
        for (let i = 1; i < results.length; i++) {
          expect(compareCheckpoints(results[i]!.result.position, results[i - 1]!.result.position)).toBeGreaterThan(0);
        }
      });

      it('reads the same events with what projectors read of their metadata when asked to (metadata: projection)', async () => {
        const s = stream('for-projection');
        const ids = [randomUUID(), randomUUID()];
        const first = await store.append([{ stream: s, expected: 'no_stream', events: [event(0)] }]);
        await store.append([{ stream: s, expected: 0, events: [{ ...event(1), id: ids[0] }, { ...event(2), id: ids[1] }] }]);
        const seen: ProjectionSourceEvent[] = [];
        for (let after = first.position; !ids.every((id) => seen.some((e) => e.eventId === id)); ) {
          const page = await store.readAll(after, 10, { metadata: 'projection' });
          if (page.events.length > 0) expect(page.checkpoint).toEqual(page.events.at(-1)!.position);
          seen.push(...page.events);
          after = page.checkpoint;
        }
        // An adapter may give the whole metadata; the business and the data's version are there, and everything else is what readStream returns.
        const forProjection = (e: ProjectionSourceEvent) => ({ ...e, metadata: { business_id: e.metadata.business_id, event_version: e.metadata.event_version } });
        const written = (await store.readStream(s)).slice(1);
        expect(new Set(seen.filter((e) => e.streamId === s).map((e) => e.metadata.business_id))).toEqual(new Set(['biz_contract']));
        expect(seen.filter((e) => e.streamId === s).map(forProjection)).toStrictEqual(written.map(forProjection));
      });

      it('continues from a checkpoint with only what was appended after it', async () => {
        const s = stream('resume');
        const first = await store.append([{ stream: s, expected: 'no_stream', events: [event(0), event(1)] }]);
        const ids = [randomUUID(), randomUUID()];
        await store.append([{ stream: s, expected: 1, events: [{ ...event(2), id: ids[0] }, { ...event(3), id: ids[1] }] }]);
        const seen = await readAllUntil(store, first.position, 10, ids);
        expect(seen.filter((e) => e.streamId === s).map((e) => e.eventId)).toEqual(ids);
      });
    });

    // These read the whole log, so they assume nobody else writes to it meanwhile (true of a fresh
    // backend; on a shared server, of the streams this run's store covers).
    describe('the log at a glance (head, counts, lag, stream heads)', () => {
      it('answers the head position: where the last event readAll returns sits, moving with every append', async () => {
        const before = await store.headPosition();
        expect(before).toEqual(await headCheckpoint(store));
        const s = stream('head');
        const first = await store.append([{ stream: s, expected: 'no_stream', events: [event(0), event(1)] }]);
        expect(await store.headPosition()).toEqual(first.position);
        expect(compareCheckpoints(first.position, before)).toBeGreaterThan(0);
        const second = await store.append([
          { stream: s, expected: 1, events: [event(2)] },
          { stream: stream('head-other'), expected: 'no_stream', events: [event(0)] },
        ]);
        expect(await store.headPosition()).toEqual(second.position);
        expect(await store.headPosition()).toEqual(await headCheckpoint(store));
        // A condition-only append writes nothing and leaves the head where it was.
        await store.append([{ stream: s, expected: 2, events: [] }]);
        expect(await store.headPosition()).toEqual(second.position);
      });

      it('counts the events readAll returns after a checkpoint, stopping at max', async () => {
        const before = await store.headPosition();
        const first = await store.append([{ stream: stream('count'), expected: 'no_stream', events: [event(0), event(1), event(2)] }]);
        const second = await store.append([
          { stream: stream('count-a'), expected: 'no_stream', events: [event(0)] },
          { stream: stream('count-b'), expected: 'no_stream', events: [event(0)] },
        ]);
        expect(await store.countEvents(before)).toBe(5);
        expect(await store.countEvents(first.position)).toBe(2);
        expect(await store.countEvents(second.position)).toBe(0);
        expect(await store.countEvents(before, { max: 2 })).toBe(2);
        expect(await store.countEvents(before, { max: 5 })).toBe(5);
        expect(await store.countEvents(before, { max: 50 })).toBe(5);
        let everything = 0;
        for (let page = await store.readAll(START, 1000); page.events.length > 0; page = await store.readAll(page.checkpoint, 1000)) everything += page.events.length;
        expect(await store.countEvents(START)).toBe(everything);
      });

      it('measures how far a checkpoint is behind a head: never fewer than the events between them, 0 at or past the head', async () => {
        const s = stream('lag');
        const before = await store.headPosition();
        const positions: Checkpoint[] = [];
        for (let i = 0; i < 3; i++) positions.push((await store.append([{ stream: s, expected: i === 0 ? 'no_stream' : i - 1, events: [event(i)] }])).position);
        const [p1, p2, p3] = positions as [Checkpoint, Checkpoint, Checkpoint];
        const head = await store.headPosition();
        expect(head).toEqual(p3);
        expect(await store.lag(head, head)).toBe(0);
        expect(await store.lag(p3, p1)).toBe(0);
        expect(await store.lag(before, head)).toBeGreaterThanOrEqual(3);
        expect(await store.lag(p1, head)).toBeGreaterThanOrEqual(2);
        expect(await store.lag(p2, head)).toBeGreaterThanOrEqual(1);
        // Only what lies up to the head given counts, not what was appended since.
        await store.append([{ stream: s, expected: 2, events: [event(3), event(4)] }]);
        expect(await store.lag(p1, p2)).toBeGreaterThanOrEqual(1);
        expect(await store.lag(p1, p2)).toBeLessThan(await store.lag(p1, await store.headPosition()));
        // `max` bounds counting, not an answer the store knows without it.
        expect(await store.lag(before, head, { max: 1 })).toBeGreaterThanOrEqual(1);
      });

      it('lists stream heads (last revision and hash) with the head position, sorted, filtered by stream or prefix', async () => {
        const a = stream('heads-a');
        const b = stream('heads-b');
        await store.append([{ stream: a, expected: 'no_stream', events: [event(0), event(1), event(2)] }]);
        await store.append([{ stream: b, expected: 'no_stream', events: [event(0)] }]);
        const last = await store.append([{ stream: a, expected: 2, events: [event(3)] }]);
        const lastHash = async (name: string) => (await store.readStream(name, { backwards: true, max: 1 }))[0]!.metadata.hash;
        const expected = [
          { stream: a, revision: 3, lastHash: await lastHash(a) },
          { stream: b, revision: 0, lastHash: await lastHash(b) },
        ].sort((x, y) => (x.stream < y.stream ? -1 : 1));
        expect(expected.every((h) => typeof h.lastHash === 'string' && h.lastHash.length === 64)).toBe(true);

        const byPrefix = await store.streamHeads({ prefix: `${run}-heads-` });
        expect(byPrefix).toEqual({ position: last.position, streams: expected });
        expect(await store.streamHeads({ stream: b })).toEqual({ position: last.position, streams: [expected.find((h) => h.stream === b)] });
        expect(await store.streamHeads({ stream: stream('heads-none') })).toEqual({ position: last.position, streams: [] });
        expect(await store.streamHeads({ prefix: `${run}-nothing-` })).toEqual({ position: last.position, streams: [] });

        const all = await store.streamHeads();
        expect(all.position).toEqual(last.position);
        expect(all.streams.filter((h) => h.stream.startsWith(`${run}-heads-`))).toEqual(expected);
        const names = all.streams.map((h) => h.stream);
        expect(names).toEqual([...names].sort((x, y) => (x < y ? -1 : x > y ? 1 : 0)));
        expect(new Set(names).size).toBe(names.length);
      });

      it('takes a prefix literally (no pattern characters)', async () => {
        const literal = `${run}-pct_%-${randomUUID().slice(0, 8)}`;
        const lookalike = `${run}-pctX-${randomUUID().slice(0, 8)}`;
        await store.append([
          { stream: literal, expected: 'no_stream', events: [event(0)] },
          { stream: lookalike, expected: 'no_stream', events: [event(0)] },
        ]);
        expect((await store.streamHeads({ prefix: `${run}-pct_%` })).streams.map((h) => h.stream)).toEqual([literal]);
        expect((await store.streamHeads({ prefix: `${run}-pct` })).streams.map((h) => h.stream)).toEqual([literal, lookalike].sort());
      });

      it(
        'answers stream heads as of one moment while appends go on: each head is its stream’s last event up to the position, and every stream written by then is there',
        async () => {
          const prefix = `${run}-moving-`;
          const names = Array.from({ length: 4 }, (_, w) => `${prefix}${w}`);
          let writing = true;
          const writers = Promise.all(
            names.map(async (name) => {
              for (let i = 0; i < 10; i++) await store.append([{ stream: name, expected: i === 0 ? 'no_stream' : i - 1, events: [event(i)] }]);
            }),
          ).finally(() => (writing = false));
          const answers = [];
          while (writing) answers.push(await store.streamHeads({ prefix }));
          await writers;
          answers.push(await store.streamHeads({ prefix }));
          const written = new Map<string, StoredEvent[]>();
          for (const name of names) written.set(name, await store.readStream(name));
          for (const answer of answers) {
            const expected = names.flatMap((name) => {
              const upTo = written.get(name)!.filter((e) => compareCheckpoints(e.position, answer.position) <= 0);
              const lastEvent = upTo.at(-1);
              return lastEvent ? [{ stream: name, revision: lastEvent.streamPosition, lastHash: lastEvent.metadata.hash }] : [];
            });
            expect(answer.streams).toEqual(expected);
          }
          expect(answers.at(-1)!.streams.map((h) => h.revision)).toEqual([9, 9, 9, 9]);
        },
        30_000,
      );
    });

    describe('onAppended', () => {
      it('calls listeners after an append is committed, and stops after unsubscribing', async () => {
        const s = stream('notify');
        const reads: Array<Promise<StoredEvent[]>> = [];
        let calls = 0;
        const unsubscribe = store.onAppended(() => {
          calls++;
          reads.push(store.readStream(s));
        });
        await store.append([{ stream: s, expected: 'no_stream', events: [event(0)] }]);
        await vi.waitFor(() => expect(calls).toBe(1), { timeout: 5000 });
        await store.append([{ stream: s, expected: 0, events: [event(1)] }]);
        await vi.waitFor(() => expect(calls).toBe(2), { timeout: 5000 });
        // A read started by the listener already sees the write that woke it.
        expect((await reads[0]!).map((e) => e.data.n)).toEqual([0]);
        expect((await reads[1]!).map((e) => e.data.n)).toEqual([0, 1]);

        unsubscribe();
        await store.append([{ stream: s, expected: 1, events: [event(2)] }]);
        await new Promise((r) => setTimeout(r, 50));
        expect(calls).toBe(2);
      });
    });

    describe('concurrency', () => {
      it(
        'a live reader sees every event committed by racing writers exactly once, in stream order',
        async () => {
          const WRITERS = 16;
          const APPENDS = 40;
          const race = `${run}-race`;
          const hot = `${race}-hot`;
          const own = (w: number) => `${race}-own-${String(w).padStart(2, '0')}`;
          const pair = (w: number) => `${race}-pair-${w % 4}`;

          const committed: Committed[] = [];
          const doomedIds = new Set<string>();
          let hotConflicts = 0;
          const appended = (result: AppendResult, writes: AppendWrite[]) => committed.push(committedAs(result, writes));

          async function writer(w: number): Promise<void> {
            let ownRevision: number | null = null;
            for (let i = 0; i < APPENDS; i++) {
              switch (i % 5) {
                case 0:
                case 1: {
                  // Own stream, one or three events, exact expected revision.
                  const writes: AppendWrite[] = [
                    { stream: own(w), expected: ownRevision ?? 'no_stream', events: events(i % 2 === 0 ? 1 : 3, w, i) },
                  ];
                  const result = await store.append(writes);
                  ownRevision = result.revisions[own(w)]!;
                  appended(result, writes);
                  break;
                }
                case 2: {
                  // The hot stream everyone writes to: optimistic concurrency with retry.
                  const last = await store.readStream(hot, { backwards: true, max: 1 });
                  let expected: ExpectedRevision = last[0]?.streamPosition ?? 'no_stream';
                  for (let attempt = 1; ; attempt++) {
                    const writes: AppendWrite[] = [{ stream: hot, expected, events: events(1 + (w % 2), w, i) }];
                    try {
                      appended(await store.append(writes), writes);
                      break;
                    } catch (error) {
                      if (!(error instanceof WrongExpectedVersion) || error.actual === 'unknown' || attempt >= 500) throw error;
                      writes[0]!.events.forEach((e) => doomedIds.add(e.id!));
                      hotConflicts++;
                      expected = error.actual;
                    }
                  }
                  break;
                }
                case 3: {
                  // Two streams atomically: own (exact revision) and a pair stream shared by 4 writers.
                  const writes: AppendWrite[] = [
                    { stream: own(w), expected: ownRevision!, events: events(1, w, i) },
                    { stream: pair(w), expected: 'any', events: events(2, w, i) },
                  ];
                  const result = await store.append(writes);
                  ownRevision = result.revisions[own(w)]!;
                  appended(result, writes);
                  break;
                }
                case 4: {
                  // Doomed: the pair write alone would succeed, but the own expectation is wrong.
                  // Alternately ahead of and behind the stream's real revision.
                  const wrong = i % 2 === 0 ? ownRevision! + 1 : ownRevision! - 1;
                  const writes: AppendWrite[] = [
                    { stream: pair(w), expected: 'any', events: events(2, w, i) },
                    { stream: own(w), expected: wrong, events: events(1, w, i) },
                  ];
                  const error = await failure(store.append(writes));
                  expectWrongVersion(error, own(w), wrong, ownRevision!);
                  writes.flatMap((x) => x.events).forEach((e) => doomedIds.add(e.id!));
                  break;
                }
              }
            }
          }

          // The reader starts where the store is now and keeps reading small pages the whole time.
          const from = await headCheckpoint(store);
          let writing = true;
          let expectedIds: Set<string> | null = null;
          const seen: StoredEvent[] = [];
          const pageCheckpoints: Checkpoint[] = [];
          let seenWhileWriting = 0;
          let checkpoint = from;
          let drainDeadline = Infinity;
          const reader = (async () => {
            for (;;) {
              const page = await store.readAll(checkpoint, 7);
              if (page.events.length > 0) {
                if (writing) seenWhileWriting += page.events.length;
                seen.push(...page.events);
                checkpoint = page.checkpoint;
                pageCheckpoints.push(page.checkpoint);
                continue;
              }
              if (expectedIds) {
                const have = new Set(seen.map((e) => e.eventId));
                if ([...expectedIds].every((id) => have.has(id)) || Date.now() > drainDeadline) return;
              }
              // No timer between polls: on an embedded store the writers' work is all promise
              // continuations, so a timer would not fire until they finish and the reader would not be live.
            }
          })();

          try {
            await Promise.all(Array.from({ length: WRITERS }, (_, w) => writer(w)));
          } catch (error) {
            expectedIds = new Set(); // stop the reader before failing
            await reader.catch(() => {});
            throw error;
          } finally {
            writing = false;
          }

          const streams = [hot, ...Array.from({ length: WRITERS }, (_, w) => own(w)), ...[0, 1, 2, 3].map(pair)];
          const stored = new Map<string, StoredEvent[]>();
          for (const s of streams) stored.set(s, await store.readStream(s));
          drainDeadline = Date.now() + 15_000;
          expectedIds = new Set([...stored.values()].flat().map((e) => e.eventId));
          await reader;
          const tail = await store.readAll(checkpoint, 1000);

          // The reader was live: it received events while the writers were still running.
          expect(seenWhileWriting).toBeGreaterThan(0);
          // The writers really raced on the hot stream.
          expect(hotConflicts).toBeGreaterThan(0);

          // What the store holds is exactly what the writers committed.
          const hotOps = WRITERS * (APPENDS / 5);
          const hotEvents = Array.from({ length: WRITERS }, (_, w) => (APPENDS / 5) * (1 + (w % 2))).reduce((x, y) => x + y);
          expect(stored.get(hot)!.length).toBe(hotEvents);
          const hotIds = new Set(stored.get(hot)!.map((e) => e.eventId));
          expect(committed.filter((c) => c.ids.some((id) => hotIds.has(id))).length).toBe(hotOps);
          for (let w = 0; w < WRITERS; w++) expect(stored.get(own(w))!.length).toBe((APPENDS / 5) * (1 + 3 + 1));
          for (const p of [0, 1, 2, 3]) expect(stored.get(pair(p))!.length).toBe((WRITERS / 4) * (APPENDS / 5) * 2);
          for (const [s, list] of stored) expect(list.map((e) => e.streamPosition), s).toEqual(list.map((_, i) => i));

          // Every committed event once, no duplicates, nothing rolled back, nothing after the drain.
          const ours = seen.filter((e) => e.streamId.startsWith(`${race}-`));
          expect(duplicates(seen.map((e) => e.eventId))).toEqual([]);
          expect(ours.length, 'events of the race the live reader received').toBe(expectedIds.size);
          expect(new Set(ours.map((e) => e.eventId))).toEqual(expectedIds);
          expect(ours.filter((e) => doomedIds.has(e.eventId))).toEqual([]);
          expect(tail.events.filter((e) => e.streamId.startsWith(`${race}-`))).toEqual([]);

          // Order: strictly increasing positions, each stream in its own order.
          expectStrictlyIncreasing(seen);
          for (let i = 1; i < pageCheckpoints.length; i++) {
            expect(compareCheckpoints(pageCheckpoints[i]!, pageCheckpoints[i - 1]!)).toBeGreaterThan(0);
          }
          for (const [s, list] of stored) {
            expect(ours.filter((e) => e.streamId === s).map((e) => e.eventId), s).toEqual(list.map((e) => e.eventId));
          }
          // Each append's reported position is where its last event sits in readAll order.
          expectPositionsReported(committed, ours);
        },
        60_000,
      );
    });

    async function numbers(s: string): Promise<number[]> {
      return (await store.readStream(s)).map((e) => e.data.n);
    }

    async function positions(s: string, options: Parameters<EventStore['readStream']>[1]): Promise<number[]> {
      return (await store.readStream(s, options)).map((e) => e.streamPosition);
    }
  });
}

function typed(type: string): NewEvent {
  return { id: randomUUID(), type, data: { type }, metadata: meta('biz_contract') };
}

function event(n: number): NewEvent {
  return { id: randomUUID(), type: 'ContractTested', data: { n }, metadata: meta('biz_contract') };
}

function events(count: number, writer: number, step: number): NewEvent[] {
  return Array.from({ length: count }, (_, k) => ({
    id: randomUUID(),
    type: 'RaceTested',
    data: { writer, step, k },
    metadata: meta('biz_contract'),
  }));
}

interface Committed {
  result: AppendResult;
  ids: string[];
}

function committedAs(result: AppendResult, writes: AppendWrite[]): Committed {
  return { result, ids: writes.flatMap((w) => w.events.map((e) => e.id!)) };
}

/** Each append's `position` is the readAll position of the last of its events. */
function expectPositionsReported(committed: Committed[], seen: StoredEvent[]): void {
  const byId = new Map(seen.map((e) => [e.eventId, e]));
  for (const { result, ids } of committed) {
    const positions = ids.map((id) => byId.get(id)?.position);
    expect(positions.every((p) => p !== undefined), 'every committed event was read').toBe(true);
    const last = (positions as Checkpoint[]).reduce((a, b) => (compareCheckpoints(a, b) >= 0 ? a : b));
    expect(result.position).toEqual(last);
  }
}

async function failure(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => {
      throw new Error('expected the append to fail, but it succeeded');
    },
    (error: unknown) => error,
  );
}

function expectWrongVersion(error: unknown, stream: string, expected: ExpectedRevision, actual: number | 'no_stream'): void {
  expect(error).toBeInstanceOf(WrongExpectedVersion);
  const wrong = error as WrongExpectedVersion;
  expect({ stream: wrong.stream, expected: wrong.expected, actual: wrong.actual }).toEqual({ stream, expected, actual });
}

function duplicates(ids: string[]): string[] {
  const seen = new Set<string>();
  return ids.filter((id) => (seen.has(id) ? true : (seen.add(id), false)));
}

function expectStrictlyIncreasing(events: StoredEvent[]): void {
  for (let i = 1; i < events.length; i++) {
    if (compareCheckpoints(events[i]!.position, events[i - 1]!.position) <= 0) {
      throw new Error(`readAll order went backwards at index ${i}: ${show(events[i - 1]!)} then ${show(events[i]!)}`);
    }
  }
}

function show(e: StoredEvent): string {
  return `${e.streamId}@${e.streamPosition} (${e.position.globalPosition})`;
}

/**
 * Reads pages from `from` until every id in `ids` has been returned. A page can come back empty
 * while another transaction is still open, so an empty page is not the end; a deadline is.
 */
async function readAllUntil(
  store: EventStore,
  from: Checkpoint,
  max: number,
  ids: string[],
  onPage?: (page: { after: Checkpoint; events: StoredEvent[]; checkpoint: Checkpoint }) => void,
): Promise<StoredEvent[]> {
  const missing = new Set(ids);
  const seen: StoredEvent[] = [];
  let checkpoint = from;
  const deadline = Date.now() + 15_000;
  while (missing.size > 0 && Date.now() < deadline) {
    const page = await store.readAll(checkpoint, max);
    onPage?.({ after: checkpoint, ...page });
    if (page.events.length === 0) {
      await new Promise((r) => setTimeout(r, 5));
      continue;
    }
    seen.push(...page.events);
    page.events.forEach((e) => missing.delete(e.eventId));
    checkpoint = page.checkpoint;
  }
  return seen;
}

/** The checkpoint after everything readable now. */
async function headCheckpoint(store: EventStore): Promise<Checkpoint> {
  let checkpoint = START;
  for (;;) {
    const page = await store.readAll(checkpoint, 1000);
    if (page.events.length === 0) return checkpoint;
    checkpoint = page.checkpoint;
  }
}

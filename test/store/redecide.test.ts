import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiError } from '../../src/errors.js';
import { type AppendWrite, DependencyFailed, type RecordedEvent, type Redecide, WrongExpectedVersion } from '../../src/store/event-store.js';
import { planBatch } from '../../src/store/append-plan.js';
import { PostgresEventStore } from '../../src/store/postgres-event-store.js';
import { openTestDatabase, STORE_KIND } from '../support/test-database.js';
import { meta } from './store-test-helpers.js';

/**
 * `AppendOptions.redecide`: an append that finds a stream moved since it was decided is decided
 * again inside its batch, on the stream as the batch holds it, instead of failing.
 */
describe(`postgres event store: deciding again inside the batch (${STORE_KIND})`, () => {
  let handle: Awaited<ReturnType<typeof openTestDatabase>>;
  let store: PostgresEventStore;
  const stream = (label: string) => `rd-${label}-${randomUUID().slice(0, 8)}`;
  const counted = (n: number) => ({ id: randomUUID(), type: 'Counted', data: { n }, metadata: meta() });

  /** Appends one `Counted` event whose `n` is the number of events before it, decided on `read`. */
  const countOn = (s: string, reads: Array<RecordedEvent[]>): Redecide => async (read) => {
    const events = await read(s, 0);
    reads.push(events);
    return [{ stream: s, expected: events.length - 1 < 0 ? 'no_stream' : events.length - 1, events: [counted(events.length)] }];
  };

  beforeAll(async () => {
    handle = await openTestDatabase();
    store = new PostgresEventStore(handle.db, { redecide: true });
  });
  afterAll(() => handle?.close());

  const data = async (s: string) => (await store.readStream(s)).map((e) => e.data.n);

  it('decides a stale append again on the committed events, and appends that', async () => {
    const s = stream('stale');
    await store.append([{ stream: s, expected: 'no_stream', events: [counted(0), counted(1)] }]);
    const reads: RecordedEvent[][] = [];
    // decided on a state that had seen only the first event
    const result = await store.append([{ stream: s, expected: 0, events: [counted(1)] }], { redecide: countOn(s, reads) });
    expect(result.revisions[s]).toBe(2);
    expect(await data(s)).toEqual([0, 1, 2]);
    expect(reads.map((events) => events.map((e) => e.streamPosition))).toEqual([[0, 1]]);
  });

  it('decides again, in order, appends of one batch whose first was stale, each seeing those before it', async () => {
    const s = stream('chain');
    await store.append([{ stream: s, expected: 'no_stream', events: [counted(0), counted(1), counted(2)] }]);
    const reads: RecordedEvent[][] = [];
    const first = store.append([{ stream: s, expected: 0, events: [counted(1)] }], { redecide: countOn(s, reads) });
    const second = store.append([{ stream: s, expected: 1, events: [counted(2)] }], { after: [first], redecide: countOn(s, reads) });
    const third = store.append([{ stream: s, expected: 2, events: [counted(3)] }], { after: [second], redecide: countOn(s, reads) });
    await Promise.all([first, second, third]);
    expect(await data(s)).toEqual([0, 1, 2, 3, 4, 5]);
  });

  it('fails the append with the refusal the new decision throws, writing nothing', async () => {
    const s = stream('refused');
    await store.append([{ stream: s, expected: 'no_stream', events: [counted(0), counted(1)] }]);
    const refusal = new ApiError(422, 'insufficient_points', 'no');
    const attempt = store.append([{ stream: s, expected: 0, events: [counted(1)] }], { redecide: async () => Promise.reject(refusal) });
    await expect(attempt).rejects.toBe(refusal);
    expect(await data(s)).toEqual([0, 1]);
  });

  it('fails as without it when the new decision needs a stream the batch does not hold', async () => {
    const s = stream('held');
    await store.append([{ stream: s, expected: 'no_stream', events: [counted(0), counted(1)] }]);
    const elsewhere: AppendWrite = { stream: stream('elsewhere'), expected: 'no_stream', events: [counted(0)] };
    const attempt = store.append([{ stream: s, expected: 0, events: [counted(1)] }], { redecide: async () => [elsewhere] });
    await expect(attempt).rejects.toBeInstanceOf(WrongExpectedVersion);
    expect(await data(s)).toEqual([0, 1]);
    expect(await data(elsewhere.stream)).toEqual([]);
  });

  it('is ignored by a store that does not decide again (PGlite has one connection): the append fails', async () => {
    const plain = new PostgresEventStore(handle.db);
    const s = stream('plain');
    await plain.append([{ stream: s, expected: 'no_stream', events: [counted(0), counted(1)] }]);
    const first = plain.append([{ stream: s, expected: 0, events: [counted(1)] }], { redecide: countOn(s, []) });
    const second = plain.append([{ stream: s, expected: 1, events: [counted(2)] }], { after: [first], redecide: countOn(s, []) });
    await expect(first).rejects.toBeInstanceOf(WrongExpectedVersion);
    await expect(second).rejects.toBeInstanceOf(DependencyFailed);
    expect(await data(s)).toEqual([0, 1]);
  });

  it('reads only the streams that moved: one the batch holds and found unchanged is not read again', async () => {
    const moved = stream('moved');
    const condition = stream('condition');
    await store.append([
      { stream: moved, expected: 'no_stream', events: [counted(0), counted(1)] },
      { stream: condition, expected: 'no_stream', events: [counted(0)] },
    ]);
    const found = new Map([
      [moved, { version: 1, lastHash: 'h1' }],
      [condition, { version: 0, lastHash: 'h0' }],
    ]);
    const reads: string[] = [];
    const readCommitted = async (s: string, from: number) => {
      reads.push(`${s}@${from}`);
      return (await store.readStream(s, { from })).map((e) => ({ streamPosition: e.streamPosition, type: e.type, data: e.data }));
    };
    const redecide: Redecide = async (read) => {
      const events = await read(moved, 1);
      const unchanged = await read(condition, 1);
      expect(unchanged).toEqual([]);
      return [
        { stream: moved, expected: events.at(-1)!.streamPosition, events: [counted(2)] },
        { stream: condition, expected: 0, events: [] },
      ];
    };
    const plan = await planBatch(
      [{ writes: [{ stream: moved, expected: 0, events: [counted(1)] }, { stream: condition, expected: 0, events: [] }], after: [], redecide }],
      found,
      readCommitted,
    );
    expect(plan.outcomes[0]!.ok).toBe(true);
    expect(reads).toEqual([`${moved}@1`]);
  });
});

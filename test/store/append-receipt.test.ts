import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { idempotencyStore } from '../../src/http/middleware/idempotency-store.js';
import { AnswerAlreadyStored, type AppendReceipt } from '../../src/store/event-store.js';
import { PostgresEventStore } from '../../src/store/postgres-event-store.js';
import { openTestDatabase, STORE_KIND } from '../support/test-database.js';
import { meta } from './store-test-helpers.js';

/**
 * `AppendOptions.receipt`: the answer of the request that made an append is stored in the append's
 * transaction (CONTRACT.md §5), so the two commit together or not at all.
 */
describe(`postgres event store: the request's answer stored with the append (${STORE_KIND})`, () => {
  let handle: Awaited<ReturnType<typeof openTestDatabase>>;
  let store: PostgresEventStore;
  const keys = () => idempotencyStore(handle.db);
  const businessId = 'biz_receipts';
  const stream = () => `receipt-${randomUUID().slice(0, 8)}`;
  const event = () => ({ id: randomUUID(), type: 'Counted', data: { n: 1 }, metadata: meta() });
  const tokens = new Map<string, string>();
  const receipt = (key: string, body: string): AppendReceipt => ({
    businessId,
    key,
    token: tokens.get(key)!,
    status: 201,
    headers: { 'content-type': 'application/json' },
    body,
  });
  /** Claims `key` as a request's attempt would, keeping its token for the receipt. */
  async function claim(key: string) {
    const claimed = await keys().claim(businessId, key, 'fp');
    expect(claimed.outcome).toBe('proceed');
    if (claimed.outcome === 'proceed') tokens.set(key, claimed.token);
  }

  beforeAll(async () => {
    handle = await openTestDatabase();
    store = new PostgresEventStore(handle.db);
  });
  afterAll(() => handle?.close());

  it('marks the running record done with the answer, in the same commit as the events', async () => {
    await claim('k-stored');
    const s = stream();
    await store.append([{ stream: s, expected: 'no_stream', events: [event()] }], { receipt: () => receipt('k-stored', '{"id":"tx_1"}') });
    expect(await store.readStream(s)).toHaveLength(1);
    expect(await keys().claim(businessId, 'k-stored', 'fp')).toEqual({
      outcome: 'replay',
      response: { status: 201, headers: { 'content-type': 'application/json' }, body: '{"id":"tx_1"}' },
    });
  });

  it('with transactional receipts off (as on KurrentDB), appends without storing the answer: the record stays running', async () => {
    const after = new PostgresEventStore(handle.db);
    after.transactionalReceipts = false;
    await claim('k-after');
    const s = stream();
    let asked = 0;
    await after.append([{ stream: s, expected: 'no_stream', events: [event()] }], {
      receipt: () => {
        asked++;
        return receipt('k-after', '{"id":"tx_2"}');
      },
    });
    expect(asked).toBe(0);
    expect(await after.readStream(s)).toHaveLength(1);
    expect(await keys().claim(businessId, 'k-after', 'fp')).toEqual({ outcome: 'in_progress' });
  });

  it('tells an attempt that takes over a record never answered when the earlier attempt claimed it', async () => {
    const claimedAt = new Date('2026-11-25T06:00:00.000Z');
    const first = await keys().claim(businessId, 'k-taken', 'fp', claimedAt);
    expect(first).toEqual({ outcome: 'proceed', token: expect.any(String) });
    // Its process is alive (no holder given: never known dead), so the key is taken over only after the lease.
    expect(await keys().claim(businessId, 'k-taken', 'fp', new Date(claimedAt.getTime() + 59_000))).toEqual({ outcome: 'in_progress' });
    const later = await keys().claim(businessId, 'k-taken', 'fp', new Date(claimedAt.getTime() + 61_000));
    expect(later).toEqual({ outcome: 'proceed', token: expect.any(String), takenOver: { claimedAt } });
  });

  it('stores nothing when the append fails', async () => {
    await claim('k-failed');
    const s = stream();
    await store.append([{ stream: s, expected: 'no_stream', events: [event()] }]);
    await expect(store.append([{ stream: s, expected: 'no_stream', events: [event()] }], { receipt: () => receipt('k-failed', '{}') })).rejects.toThrow(
      /expected/,
    );
    expect(await keys().claim(businessId, 'k-failed', 'fp')).toEqual({ outcome: 'in_progress' });
  });

  it('fails with AnswerAlreadyStored, writing nothing, when another attempt took the key over', async () => {
    await claim('k-taken');
    const mine = tokens.get('k-taken')!;
    // The lease ran out and a retry took the key over: the first attempt may no longer answer.
    await handle.db.updateTable('idempotency_keys').set({ locked_until: new Date(0) }).where('key', '=', 'k-taken').execute();
    await claim('k-taken');
    const s = stream();
    const late = store.append([{ stream: s, expected: 'no_stream', events: [event()] }], { receipt: () => ({ ...receipt('k-taken', '{}'), token: mine }) });
    await expect(late).rejects.toBeInstanceOf(AnswerAlreadyStored);
    expect(await store.readStream(s)).toEqual([]);
  });

  it('fails with AnswerAlreadyStored, writing nothing, when another attempt of the request already stored its answer', async () => {
    await claim('k-answered');
    const first = stream();
    await store.append([{ stream: first, expected: 'no_stream', events: [event()] }], { receipt: () => receipt('k-answered', '{"first":true}') });
    const second = stream();
    const again = store.append([{ stream: second, expected: 'no_stream', events: [event()] }], { receipt: () => receipt('k-answered', '{"second":true}') });
    await expect(again).rejects.toBeInstanceOf(AnswerAlreadyStored);
    expect(await store.readStream(second)).toEqual([]);
    const replayed = await keys().claim(businessId, 'k-answered', 'fp');
    expect(replayed.outcome === 'replay' && replayed.response.body).toBe('{"first":true}');
  });

  it('in a batch, fails only the append whose request was already answered', async () => {
    await claim('k-batch-done');
    await claim('k-batch-new');
    await store.append([{ stream: stream(), expected: 'no_stream', events: [event()] }], { receipt: () => receipt('k-batch-done', '{}') });
    const [done, fresh] = [stream(), stream()];
    const outcomes = await Promise.allSettled([
      store.append([{ stream: done, expected: 'no_stream', events: [event()] }], { receipt: () => receipt('k-batch-done', '{"again":true}') }),
      store.append([{ stream: fresh, expected: 'no_stream', events: [event()] }], { receipt: () => receipt('k-batch-new', '{"new":true}') }),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual(['rejected', 'fulfilled']);
    expect(await store.readStream(done)).toEqual([]);
    expect(await store.readStream(fresh)).toHaveLength(1);
  });
});

import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ProvisionedBusiness } from '../../src/cli/provision.js';
import { PostgresEventStore } from '../../src/store/postgres-event-store.js';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { STORE_KIND } from '../support/test-database.js';

/** The lease of a claim whose process is alive (`LOYALTY_CLAIM_LEASE_MS`; 60 s by default, at least 1 s). */
const LEASE_MS = 1_000;

/**
 * Issue 12 item 5, the KurrentDB half, on a real PostgreSQL log: with the adapter's transactional
 * receipts turned off, answers are stored after the append, as on KurrentDB (where no transaction
 * spans the log and PostgreSQL). A write that committed but whose answer was never recorded is
 * answered on a retry from its events in the log (their metadata carries the Idempotency-Key),
 * not applied again. The database itself refuses the statements that go missing (a trigger the
 * test installs), so everything else runs as in production.
 */
describe(`an Idempotency-Key whose answer was not recorded, on a store that records answers after the append (${STORE_KIND})`, () => {
  let app: TestApp;
  let business: ProvisionedBusiness;

  beforeAll(async () => {
    app = await startTestApp({ config: { claimLeaseMs: LEASE_MS }, runDispatcher: false });
    const store = app.services.store;
    if (!(store instanceof PostgresEventStore)) throw new Error('these tests turn off the PostgreSQL adapter’s transactional receipts');
    store.transactionalReceipts = false;
    business = await app.business();
    await sql`create table test_refusals (op text not null, key text not null)`.execute(app.services.db);
    await sql`
      create function test_refuse(op text, key text) returns boolean language sql as
        $$ select exists (select 1 from test_refusals r where r.op = $1 and r.key = $2) $$`.execute(app.services.db);
    // A completion (`state` becoming 'done') or a release (the record deleted) of a listed key fails.
    await sql`
      create function test_refuse_record() returns trigger language plpgsql as $$
      begin
        if tg_op = 'UPDATE' and new.state = 'done' and test_refuse('complete', new.key) then
          raise exception 'the answer to % was lost (test)', new.key;
        end if;
        if tg_op = 'DELETE' and test_refuse('release', old.key) then
          raise exception 'the release of % was lost (test)', old.key;
        end if;
        return case when tg_op = 'DELETE' then old else new end;
      end $$`.execute(app.services.db);
    await sql`create trigger test_refuse_record before update or delete on idempotency_keys for each row execute function test_refuse_record()`.execute(app.services.db);
    // An append of events carrying a listed key fails.
    await sql`
      create function test_refuse_append() returns trigger language plpgsql as $$
      begin
        if test_refuse('append', new.metadata->>'idempotency_key') then
          raise exception 'the append of % failed (test)', new.metadata->>'idempotency_key';
        end if;
        return new;
      end $$`.execute(app.services.db);
    await sql`create trigger test_refuse_append before insert on events for each row execute function test_refuse_append()`.execute(app.services.db);
  });

  afterAll(async () => {
    await app?.close();
  });

  const refuse = (op: 'complete' | 'release' | 'append', key: string) => sql`insert into test_refusals values (${op}, ${key})`.execute(app.services.db);
  const allow = (key: string) => sql`delete from test_refusals where key = ${key}`.execute(app.services.db);

  function post(path: string, idempotencyKey: string, body: Record<string, unknown>) {
    return app.request('POST', path, { key: business.private_key, headers: { 'idempotency-key': idempotencyKey }, body });
  }

  /** The key's record as stored: 'running' while no answer is recorded. */
  async function record(idempotencyKey: string) {
    const { rows } = await sql<{ state: string }>`select state from idempotency_keys where business_id = ${business.business_id} and key = ${idempotencyKey}`.execute(app.services.db);
    return rows[0];
  }

  /** The events of `stream` in the log that carry this Idempotency-Key. */
  async function loggedUnder(stream: string, idempotencyKey: string) {
    const events = await app.services.store.readStream(stream);
    return events.filter((e) => e.metadata.idempotency_key === idempotencyKey);
  }

  /** `answer` is `original` replayed: the same 201 and body, marked `Idempotent-Replayed`. */
  function expectReplayOf(answer: { status: number; text: string; headers: Headers }, original: { text: string }) {
    expect(answer.status, answer.text).toBe(201);
    expect(answer.headers.get('idempotent-replayed')).toBe('true');
    expect(answer.text).toBe(original.text);
  }

  const waitForLease = () => new Promise((resolve) => setTimeout(resolve, LEASE_MS + 100));

  it('answers the retry of a committed earn from its event in the log: the same 201, one event, after the lease', async () => {
    const customerId = await app.newCustomer(business.private_key);
    const key = 'lost-answer-earn';
    const earn = { type: 'earn', amount: 10, description: 'order 1' };
    await refuse('complete', key);
    const first = await post(`/api/v1/customers/${customerId}/points/transaction`, key, earn);
    expect(first.status, first.text).toBe(201); // sent, though its record was never completed
    expect((await record(key))?.state).toBe('running');
    await allow(key);

    // Within the lease the first attempt may still be running.
    const early = await post(`/api/v1/customers/${customerId}/points/transaction`, key, earn);
    expect(early.status).toBe(409);
    expect(early.body.code).toBe('idempotency_key_in_progress');

    await waitForLease();
    const retry = await post(`/api/v1/customers/${customerId}/points/transaction`, key, earn);
    expectReplayOf(retry, first);
    expect(await loggedUnder(`customer-${customerId}`, key)).toHaveLength(1);
    expect((await record(key))?.state).toBe('done');

    // The rebuilt answer is now the stored one.
    const again = await post(`/api/v1/customers/${customerId}/points/transaction`, key, earn);
    expectReplayOf(again, first);

    const ledger = await app.request('GET', `/api/v1/customers/${customerId}/transactions`, { key: business.private_key });
    expect(ledger.body.map((t: { id: string }) => t.id)).toEqual([first.body.id]);
    const customer = await app.request('GET', `/api/v1/customers/${customerId}`, { key: business.private_key });
    expect(customer.body.points_balance).toBe(10);
  });

  it('answers with the events found even when other writes to the customer came after them', async () => {
    const customerId = await app.newCustomer(business.private_key);
    const key = 'lost-answer-busy';
    const deduct = { type: 'deduct', amount: 5, reference: 'refund-77' };
    await post(`/api/v1/customers/${customerId}/points/transaction`, 'busy-earn', { type: 'earn', amount: 50 });
    await refuse('complete', key);
    const first = await post(`/api/v1/customers/${customerId}/points/transaction`, key, deduct);
    expect(first.status, first.text).toBe(201);
    await allow(key);
    // More than a page of later events to read back over.
    for (let i = 0; i < 110; i++) {
      const later = await post(`/api/v1/customers/${customerId}/points/transaction`, `busy-${i}`, { type: 'earn', amount: 1 });
      expect(later.status, later.text).toBe(201);
    }

    await waitForLease();
    const retry = await post(`/api/v1/customers/${customerId}/points/transaction`, key, deduct);
    expectReplayOf(retry, first);
    expect(retry.body.balance).toBe(45); // the balance right after the deduct, as first answered
    expect(await loggedUnder(`customer-${customerId}`, key)).toHaveLength(1);
    const customer = await app.request('GET', `/api/v1/customers/${customerId}`, { key: business.private_key });
    expect(customer.body.points_balance).toBe(45 + 110);
  }, 60_000);

  it('runs the retry once when the first attempt never appended', async () => {
    const customerId = await app.newCustomer(business.private_key);
    const key = 'never-appended';
    const earn = { type: 'earn', amount: 7 };
    // The append fails, and so does freeing the key afterwards: the claim stays, with nothing in the log.
    await refuse('append', key);
    await refuse('release', key);
    const first = await post(`/api/v1/customers/${customerId}/points/transaction`, key, earn);
    expect(first.status).toBeGreaterThanOrEqual(500);
    expect((await record(key))?.state).toBe('running');
    expect(await loggedUnder(`customer-${customerId}`, key)).toHaveLength(0);
    await allow(key);

    await waitForLease();
    const retry = await post(`/api/v1/customers/${customerId}/points/transaction`, key, earn);
    expect(retry.status, retry.text).toBe(201);
    expect(retry.headers.get('idempotent-replayed')).toBeNull();
    expect(retry.body).toMatchObject({ type: 'earn', amount: 7, balance: 7 });
    expect(await loggedUnder(`customer-${customerId}`, key)).toHaveLength(1);

    const again = await post(`/api/v1/customers/${customerId}/points/transaction`, key, earn);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.text).toBe(retry.text);
  });

  it('answers the retry of a committed event (POST events) and of a redemption from the log', async () => {
    const customerId = await app.newCustomer(business.private_key);
    const created = await app.request('POST', '/api/v1/event-types', {
      key: business.private_key,
      body: { name: 'review', display_name: 'Review', default_points: 40 },
    });
    expect(created.status, created.text).toBe(201);
    const reward = await app.request('POST', '/api/v1/rewards', {
      key: business.private_key,
      body: { title: 'Free espresso', points_cost: 15, reward_type: 'digital' },
    });
    expect(reward.status, reward.text).toBe(201);

    const eventKey = 'lost-answer-event';
    const event = { customer_id: customerId, event_type: 'review' };
    await refuse('complete', eventKey);
    const firstEvent = await post('/api/v1/events', eventKey, event);
    expect(firstEvent.status, firstEvent.text).toBe(201);
    await allow(eventKey);

    const redemptionKey = 'lost-answer-redemption';
    const redemption = { reward_id: reward.body.id };
    await refuse('complete', redemptionKey);
    const firstRedemption = await post(`/api/v1/customers/${customerId}/redemptions`, redemptionKey, redemption);
    expect(firstRedemption.status, firstRedemption.text).toBe(201);
    await allow(redemptionKey);

    await waitForLease();
    const retryEvent = await post('/api/v1/events', eventKey, event);
    expectReplayOf(retryEvent, firstEvent);
    const retryRedemption = await post(`/api/v1/customers/${customerId}/redemptions`, redemptionKey, redemption);
    expectReplayOf(retryRedemption, firstRedemption);

    expect(await loggedUnder(`customer-${customerId}`, eventKey)).toHaveLength(1);
    expect(await loggedUnder(`customer-${customerId}`, redemptionKey)).toHaveLength(1);
    const customer = await app.request('GET', `/api/v1/customers/${customerId}`, { key: business.private_key });
    expect(customer.body.points_balance).toBe(40 - 15);
  });

  it('answers the retry of a tier created on the program stream from the log: one tier', async () => {
    const key = 'lost-answer-tier';
    const tier = { name: 'Gold', points_threshold: 500, multiplier: 2 };
    await refuse('complete', key);
    const first = await post('/api/v1/tiers', key, tier);
    expect(first.status, first.text).toBe(201);
    await allow(key);

    await waitForLease();
    const retry = await post('/api/v1/tiers', key, tier);
    expectReplayOf(retry, first);
    const tiers = await app.request('GET', '/api/v1/tiers', { key: business.private_key });
    expect(tiers.body.map((t: { id: string }) => t.id)).toEqual([first.body.id]);
  });
});

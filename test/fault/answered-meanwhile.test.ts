import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ProvisionedBusiness } from '../../src/cli/provision.js';
import { openDatabase } from '../../src/db/database.js';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { createServerDatabase } from '../support/test-database.js';

const SERVER_URL = process.env.DATABASE_URL;
/** The claim lease of both processes (`LOYALTY_CLAIM_LEASE_MS`): the retry takes the key over after it. */
const LEASE_MS = 1_000;
/** How long the first attempt's append is held inside its transaction (well past the lease). */
const HELD_MS = 2_500;

/**
 * Two attempts of one request (one Idempotency-Key) on two API processes. The first attempt's
 * append waits in its process's group commit (behind a batch held in the database), its lease runs
 * out, and the retry on the other process takes the key over and commits first. The first
 * attempt's append then finds the request answered (its answer is stored in the append's
 * transaction): it must write nothing, and its client must get the retry's answer, replayed, not an
 * error. Server only: two processes (here two apps, each with its own pool and group commit)
 * share the database.
 */
describe.skipIf(!SERVER_URL)('an attempt whose request was answered meanwhile by another attempt (PostgreSQL server)', () => {
  let a: TestApp;
  let b: TestApp;
  let business: ProvisionedBusiness;
  let drop: () => Promise<void>;

  beforeAll(async () => {
    const created = await createServerDatabase(SERVER_URL!);
    drop = created.drop;
    const config = { claimLeaseMs: LEASE_MS };
    a = await startTestApp({ database: await openDatabase({ databaseUrl: created.url }), config, runDispatcher: false });
    b = await startTestApp({ database: await openDatabase({ databaseUrl: created.url }), config, runDispatcher: false });
    business = await a.business();
    // The events of the request with X-Request-Id `held` wait in their transaction, which holds
    // the log's append lock meanwhile: every other append waits for it.
    await sql`
      create function test_hold_append() returns trigger language plpgsql as $$
      begin
        if new.metadata->>'request_id' = 'held' then perform pg_sleep(${sql.lit(HELD_MS / 1000)}); end if;
        return new;
      end $$`.execute(a.services.db);
    await sql`create trigger test_hold_append before insert on events for each row execute function test_hold_append()`.execute(a.services.db);
  }, 120_000);

  afterAll(async () => {
    await a?.close();
    await b?.close();
    await drop?.();
  });

  it('answers the attempt that lost with the answer of the one that applied the write', async () => {
    const [customerId, other] = [await a.newCustomer(business.private_key), await a.newCustomer(business.private_key)];
    const earn = { type: 'earn', amount: 7, description: 'order 9' };
    const post = (app: TestApp, customer: string, requestId: string, idempotencyKey: string) =>
      app.request('POST', `/api/v1/customers/${customer}/points/transaction`, {
        key: business.private_key,
        headers: { 'idempotency-key': idempotencyKey, 'x-request-id': requestId },
        body: earn,
      });

    // Process A's group commit is busy with the held batch when the first attempt queues its append.
    const held = post(a, other, 'held', 'holds-the-log');
    await new Promise((resolve) => setTimeout(resolve, 100));
    const first = post(a, customerId, 'first', 'answered-meanwhile');
    await new Promise((resolve) => setTimeout(resolve, LEASE_MS + 300));
    const retry = await post(b, customerId, 'retry', 'answered-meanwhile');
    const original = await first;
    expect((await held).status).toBe(201);

    expect(retry.status, retry.text).toBe(201);
    expect(retry.headers.get('idempotent-replayed')).toBeNull();
    expect(original.status, original.text).toBe(201);
    expect(original.headers.get('idempotent-replayed')).toBe('true');
    expect(original.text).toBe(retry.text);
    const events = await a.services.store.readStream(`customer-${customerId}`);
    expect(events.filter((e) => e.type === 'PointsEarned')).toHaveLength(1);
    const customer = await b.request('GET', `/api/v1/customers/${customerId}`, { key: business.private_key });
    expect(customer.body.points_balance).toBe(7);
  }, 30_000);
});

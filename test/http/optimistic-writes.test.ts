import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { createApp } from '../../src/http/app.js';
import { createServices } from '../../src/services.js';
import { instanceBeside } from '../support/instance-beside.js';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { STORE_KIND } from '../support/test-database.js';

/**
 * Commands decide on the state this process cached after its own last write, without reading the
 * store. These tests write behind such a cache, through a second instance of the service on the
 * same database (its own caches, as a second server process has), and check that the next write
 * through the first instance still decides on what is really there.
 */
describe('writes decided on cached state', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  let other: Awaited<ReturnType<typeof instanceBeside>>;
  beforeAll(async () => {
    other = await instanceBeside(t);
  });
  afterAll(() => other.services.close());

  const earn = (key: string, id: string, amount: number) =>
    t.request('POST', `/api/v1/customers/${id}/points/transaction`, { key, body: { type: 'earn', amount, apply_multiplier: true } });

  it('earns on the real balance when another instance wrote to the customer since this one cached it', async () => {
    const { private_key: key } = await t.business();
    const id = await t.newCustomer(key);
    expect((await earn(key, id, 10)).body.balance).toBe(10);

    const behind = await other.request('POST', `/api/v1/customers/${id}/points/transaction`, key, { type: 'earn', amount: 5 });
    expect(behind.status, behind.text).toBe(201);
    expect(behind.body.balance).toBe(15);

    const next = await earn(key, id, 7);
    expect(next.status, next.text).toBe(201);
    expect(next.body.balance).toBe(22);
    const deduct = await t.request('POST', `/api/v1/customers/${id}/points/transaction`, { key, body: { type: 'deduct', amount: 22 } });
    expect(deduct.status, deduct.text).toBe(201);
    expect(deduct.body.balance).toBe(0);
    const summary = await t.request('GET', `/api/v1/customers/${id}/summary`, { key });
    expect(summary.body.points).toEqual({ balance: 0, lifetime_earned: 22, lifetime_redeemed: 22, pending: 0, lifetime_expired: 0, next_expiring: null });
  });

  it('refuses on the real balance, not on a cached one that another instance has since moved', async () => {
    const { private_key: key } = await t.business();
    const id = await t.newCustomer(key);
    expect((await earn(key, id, 10)).status).toBe(201);
    expect((await other.request('POST', `/api/v1/customers/${id}/points/transaction`, key, { type: 'earn', amount: 90 })).status).toBe(201);

    // The cached balance (10) would refuse this; the real one (100) covers it.
    const deduct = await t.request('POST', `/api/v1/customers/${id}/points/transaction`, { key, body: { type: 'deduct', amount: 60 } });
    expect(deduct.status, deduct.text).toBe(201);
    expect(deduct.body.balance).toBe(40);
  });

  it('records a change that is no change to the cached state but is one to what another instance wrote since', async () => {
    const { private_key: key } = await t.business();
    const created = await t.request('POST', '/api/v1/customers', { key, body: { email: 'named@example.com', last_name: 'Avery' } });
    const id = created.body.id as string;
    expect((await other.request('PATCH', `/api/v1/customers/${id}`, key, { last_name: 'Blake' })).body.last_name).toBe('Blake');

    const patched = await t.request('PATCH', `/api/v1/customers/${id}`, { key, body: { last_name: 'Avery' } });
    expect(patched.status, patched.text).toBe(200);
    expect(patched.body.last_name).toBe('Avery');
  });

  it('earns under a tier another instance created since this one cached the program', async () => {
    const { private_key: key } = await t.business();
    const id = await t.newCustomer(key);
    expect((await earn(key, id, 10)).body).toMatchObject({ balance: 10, multiplier: 1 });

    const tier = await other.request('POST', '/api/v1/tiers', key, { name: 'Gold', points_threshold: 15, multiplier: 2 });
    expect(tier.status, tier.text).toBe(201);

    // Lifetime 20 reaches Gold: the earn must see the tier to upgrade the customer.
    expect((await earn(key, id, 10)).body).toMatchObject({ balance: 20, multiplier: 1 });
    const summary = await t.request('GET', `/api/v1/customers/${id}/summary`, { key });
    expect(summary.body.tier.current).toMatchObject({ id: tier.body.id, name: 'Gold', multiplier: 2 });
    // And the next earn is doubled.
    expect((await earn(key, id, 10)).body).toMatchObject({ amount: 20, base_amount: 10, multiplier: 2, balance: 40 });
  });

  // Two instances writing one customer at once, as two server processes do (CONTRACT.md §12): an
  // append that finds the customer moved by the other is decided again inside its batch, on the
  // stream as it is. On a server only: the embedded store has one process (and one connection).
  describe.runIf(STORE_KIND === 'postgres')('one customer written by two instances at once', () => {
    it('answers every earn 201, each with the balance right after it', async () => {
      const { private_key: key } = await t.business();
      const id = await t.newCustomer(key);
      const path = `/api/v1/customers/${id}/points/transaction`;
      const answers = await Promise.all(
        Array.from({ length: 200 }, (_, i) =>
          i % 2 ? other.request('POST', path, key, { type: 'earn', amount: 1, reference: `two-${i}` }) : t.request('POST', path, { key, body: { type: 'earn', amount: 1, reference: `two-${i}` } }),
        ),
      );
      expect(answers.filter((a) => a.status !== 201).map((a) => a.text)).toEqual([]);
      expect(answers.map((a) => a.body.balance).sort((a, b) => a - b)).toEqual(Array.from({ length: 200 }, (_, i) => i + 1));
      const ledger = await t.walk(key, `/api/v1/customers/${id}/transactions?limit=200`);
      expect(ledger.map((line) => line.balance)).toEqual(Array.from({ length: 200 }, (_, i) => i + 1));
    });

    it('refuses on the real balance: of 40 deducts of 1 from 25 points, 25 succeed and 15 answer insufficient_points', async () => {
      const { private_key: key } = await t.business();
      const id = await t.newCustomer(key);
      const path = `/api/v1/customers/${id}/points/transaction`;
      expect((await t.request('POST', path, { key, body: { type: 'earn', amount: 25 } })).status).toBe(201);
      const answers = await Promise.all(
        Array.from({ length: 40 }, (_, i) =>
          i % 2 ? other.request('POST', path, key, { type: 'deduct', amount: 1 }) : t.request('POST', path, { key, body: { type: 'deduct', amount: 1 } }),
        ),
      );
      const outcomes = answers.map((a) => (a.status === 201 ? 'ok' : a.body.code));
      expect(outcomes.filter((o) => o === 'ok')).toHaveLength(25);
      expect(outcomes.filter((o) => o !== 'ok')).toEqual(Array(15).fill('insufficient_points'));
      expect((await t.request('GET', `/api/v1/customers/${id}`, { key })).body.points_balance).toBe(0);
    });
  });

  it('earns with a multiplier another instance changed since this one cached the program', async () => {
    const { private_key: key } = await t.business();
    const tier = await t.request('POST', '/api/v1/tiers', { key, body: { name: 'Silver', points_threshold: 0, multiplier: 2 } });
    expect(tier.status, tier.text).toBe(201);
    const id = await t.newCustomer(key);
    expect((await earn(key, id, 10)).body).toMatchObject({ amount: 10, multiplier: 1 }); // reaches Silver
    expect((await earn(key, id, 10)).body).toMatchObject({ amount: 20, multiplier: 2 });

    expect((await other.request('PATCH', `/api/v1/tiers/${tier.body.id}`, key, { multiplier: 3 })).status).toBe(200);
    expect((await earn(key, id, 10)).body).toMatchObject({ amount: 30, multiplier: 3, balance: 60 });
  });
});

describe('the answer to a write whose read models have not caught up in time', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  /** No projection runs anywhere once this is called; the instance returned waits for them 1 ms, so it answers before they catch up. */
  async function instanceAheadOfItsReadModels() {
    await t.services.projections.stop();
    return createServices({
      config: { ...loadConfig({}), logLevel: 'silent', rateLimitRps: 0, readYourWritesTimeoutMs: 1 },
      database: { ...t.services.database, close: async () => {} },
      runProjections: false,
      projectionsElsewhere: true,
      logger: pino({ level: 'silent' }),
    });
  }

  it('creates and updates customers: the answer is the customer as written, never a 404 or the old profile', async () => {
    const { private_key: key } = await t.business();
    const projected = await t.request('POST', '/api/v1/customers', { key, body: { email: 'projected@example.com', metadata: { keep: true } } });
    expect((await t.request('POST', `/api/v1/customers/${projected.body.id}/points/transaction`, { key, body: { type: 'earn', amount: 3 } })).status).toBe(201);
    const waitsBriefly = await instanceAheadOfItsReadModels();
    const answers: Array<{ status: number; body: Record<string, unknown> }> = [];
    try {
      const http = createApp(waitsBriefly);
      const send = async (method: string, path: string, body: unknown) => {
        const response = await http.request(path, { method, headers: { 'x-api-key': key, 'content-type': 'application/json' }, body: JSON.stringify(body) });
        const answer = { status: response.status, body: (await response.json()) as Record<string, unknown> };
        answers.push(answer);
        return answer;
      };
      const created = await send('POST', '/api/v1/customers', { email: 'Lagging@Example.com', first_name: 'Ada', metadata: { a: 1 } });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      expect(created.body).toEqual({
        id: expect.stringMatching(/^cust_/),
        email: 'Lagging@Example.com',
        phone: null,
        first_name: 'Ada',
        last_name: null,
        external_reference: null,
        metadata: { a: 1 },
        points_balance: 0,
        lifetime_earned: 0,
        lifetime_redeemed: 0,
        points_pending: 0,
        lifetime_expired: 0,
        next_expiring: null,
        tier: null,
        created_at: expect.any(String),
        updated_at: created.body.created_at,
      });
      expect((await t.request('GET', `/api/v1/customers/${created.body.id}`, { key })).status).toBe(404); // not projected yet

      const updated = await send('PATCH', `/api/v1/customers/${created.body.id}`, { last_name: 'Lovelace', metadata: { b: 2 } });
      expect(updated.status, JSON.stringify(updated.body)).toBe(200);
      expect(updated.body).toEqual({ ...created.body, last_name: 'Lovelace', metadata: { b: 2 }, updated_at: expect.any(String) });
      expect(Date.parse(updated.body.updated_at as string)).toBeGreaterThanOrEqual(Date.parse(created.body.created_at as string));

      // A customer whose row is there but does not show this change yet.
      const before = await t.request('GET', `/api/v1/customers/${projected.body.id}`, { key });
      const patched = await send('PATCH', `/api/v1/customers/${projected.body.id}`, { phone: '+15550100' });
      expect(patched.status).toBe(200);
      expect(patched.body).toEqual({ ...before.body, phone: '+15550100', points_balance: 3, updated_at: expect.any(String) });
      expect(patched.body.updated_at).not.toBe(before.body.updated_at);
    } finally {
      await waitsBriefly.close();
    }
    await t.services.projections.catchUp();
    t.services.projections.start();
    const [created, updated, patched] = answers;
    expect((await t.request('GET', `/api/v1/customers/${created!.body.id}`, { key })).body).toEqual(updated!.body);
    expect((await t.request('GET', `/api/v1/customers/${projected.body.id}`, { key })).body).toEqual(patched!.body);
  });

  it('is the 201 with the recorded transaction, replayed as such, and the read models show it once they catch up', async () => {
    const { private_key: key } = await t.business();
    const created = await t.request('POST', '/api/v1/customers', { key, body: { email: 'late-models@example.com' } });
    const id = created.body.id as string;
    expect((await t.request('POST', `/api/v1/customers/${id}/points/transaction`, { key, body: { type: 'earn', amount: 5 } })).status).toBe(201);

    const waitsBriefly = await instanceAheadOfItsReadModels();
    let answered: unknown;
    try {
      const http = createApp(waitsBriefly);
      const post = async () => {
        const response = await http.request(`/api/v1/customers/${id}/points/transaction`, {
          method: 'POST',
          headers: { 'x-api-key': key, 'content-type': 'application/json', 'idempotency-key': 'late-1' },
          body: JSON.stringify({ type: 'earn', amount: 7, description: 'late', reference: 'order-late', metadata: { b: 1, a: 'x' } }),
        });
        return { status: response.status, replayed: response.headers.get('idempotent-replayed'), body: await response.json() };
      };
      const first = await post();
      expect(first.status, JSON.stringify(first.body)).toBe(201);
      expect(first.body).toEqual({
        id: expect.stringMatching(/^txn_/),
        customer_id: id,
        type: 'earn',
        amount: 7,
        balance: 12,
        base_amount: 7,
        multiplier: 1,
        description: 'late',
        reference: 'order-late',
        metadata: { b: 1, a: 'x' },
        available_at: null,
        expires_at: null,
        created_at: expect.any(String),
      });
      const ledgerBefore = await t.request('GET', `/api/v1/customers/${id}/transactions`, { key });
      expect(ledgerBefore.body.map((l: { id: string }) => l.id)).not.toContain(first.body.id);

      const retry = await post();
      expect(retry).toEqual({ ...first, replayed: 'true' });
      answered = first.body;
    } finally {
      await waitsBriefly.close();
    }

    await t.services.projections.catchUp();
    const ledger = await t.request('GET', `/api/v1/customers/${id}/transactions`, { key });
    expect(ledger.body).toHaveLength(2);
    expect(ledger.body[1]).toEqual(answered as Record<string, unknown>);
  });
});

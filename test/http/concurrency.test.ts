import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { createApp } from '../../src/http/app.js';
import { createServices, type Services } from '../../src/services.js';
import { startTestApp, type TestApp, type TestResponse } from '../support/test-app.js';
import { foldPoints } from '../support/fold-points.js';

interface StreamEvent {
  position: number;
  type: string;
  data: Record<string, any>;
}

describe('concurrent requests', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  const transact = (key: string, customerId: string, body: unknown) =>
    t.request('POST', `/api/v1/customers/${customerId}/points/transaction`, { key, body });

  const walk = (key: string, path: string) => t.walk(key, path);

  const ledger = (key: string, id: string) => walk(key, `/api/v1/customers/${id}/transactions?limit=200`);
  const stream = (key: string, id: string): Promise<StreamEvent[]> => walk(key, `/api/v1/customers/${id}/stream?limit=200`);
  const customer = async (key: string, id: string) => (await t.request('GET', `/api/v1/customers/${id}`, { key })).body;

  /** Each ledger line's balance is the previous line's plus its own signed amount, starting at 0. */
  function expectRunningBalances(lines: Array<{ type: string; amount: number; balance: number }>) {
    let running = 0;
    for (const line of lines) {
      running += line.type === 'deduct' ? -line.amount : line.amount;
      expect(line.balance).toBe(running);
      expect(line.balance).toBeGreaterThanOrEqual(0);
    }
    return running;
  }

  it('applies 40 parallel earns on one customer, each exactly once, with a consistent running balance', async () => {
    const { private_key: key } = await t.business();
    const id = await t.newCustomer(key, { email: 'parallel-earn@example.com' });
    const amounts = Array.from({ length: 40 }, (_, i) => i + 1);

    const responses = await Promise.all(amounts.map((amount) => transact(key, id, { type: 'earn', amount, description: `earn ${amount}` })));
    expect(responses.map((r) => r.status)).toEqual(amounts.map(() => 201));
    const total = amounts.reduce((a, b) => a + b, 0);

    const after = await customer(key, id);
    expect(after).toMatchObject({ points_balance: total, lifetime_earned: total, lifetime_redeemed: 0 });

    const lines = await ledger(key, id);
    expect(lines).toHaveLength(40);
    expect(expectRunningBalances(lines)).toBe(total);
    expect(lines.map((l) => l.amount).sort((a, b) => a - b)).toEqual(amounts);
    // Every response reported the balance its own ledger line shows, and no two saw the same balance.
    const byId = new Map(lines.map((l) => [l.id, l]));
    for (const r of responses) expect(byId.get(r.body.id)).toEqual(r.body);
    expect(new Set(responses.map((r) => r.body.balance)).size).toBe(40);
  });

  it('creates exactly one transaction when 20 parallel requests share a reference', async () => {
    const { private_key: key } = await t.business();
    const id = await t.newCustomer(key, { email: 'parallel-ref@example.com' });

    const responses = await Promise.all(
      Array.from({ length: 20 }, (_, i) => transact(key, id, { type: 'earn', amount: 10 + i, reference: 'order-9000' })),
    );
    const created = responses.filter((r) => r.status === 201);
    const duplicates = responses.filter((r) => r.status !== 201);
    expect(created).toHaveLength(1);
    expect(duplicates).toHaveLength(19);
    const winner = created[0]!.body;
    for (const d of duplicates) {
      expect(d.status).toBe(409);
      expect(d.body.code).toBe('duplicate_transaction');
      expect(d.body.transaction).toEqual(winner);
    }

    const lines = await ledger(key, id);
    expect(lines).toEqual([winner]);
    expect(await customer(key, id)).toMatchObject({ points_balance: winner.amount, lifetime_earned: winner.amount });
  });

  it('lets exactly as many parallel deducts succeed as the balance covers, never going negative', async () => {
    const { private_key: key } = await t.business();
    const id = await t.newCustomer(key, { email: 'parallel-deduct@example.com' });
    expect((await transact(key, id, { type: 'earn', amount: 100 })).status).toBe(201);

    const responses = await Promise.all(Array.from({ length: 30 }, () => transact(key, id, { type: 'deduct', amount: 10 })));
    const ok = responses.filter((r) => r.status === 201);
    const refused = responses.filter((r) => r.status !== 201);
    expect(ok).toHaveLength(10);
    expect(refused).toHaveLength(20);
    for (const r of refused) {
      expect(r.status).toBe(422);
      expect(r.body.code).toBe('insufficient_points');
    }
    expect(ok.map((r) => r.body.balance).sort((a, b) => a - b)).toEqual([0, 10, 20, 30, 40, 50, 60, 70, 80, 90]);

    expect(await customer(key, id)).toMatchObject({ points_balance: 0, lifetime_earned: 100, lifetime_redeemed: 100 });
    const lines = await ledger(key, id);
    expect(lines).toHaveLength(11);
    expect(expectRunningBalances(lines)).toBe(0);
  });

  it('lets parallel adjusts and deducts never take the balance below zero', async () => {
    const { private_key: key } = await t.business();
    const id = await t.newCustomer(key, { email: 'parallel-mixed-debit@example.com' });
    expect((await transact(key, id, { type: 'earn', amount: 50 })).status).toBe(201);
    const responses = await Promise.all(
      Array.from({ length: 20 }, (_, i) => transact(key, id, i % 2 ? { type: 'adjust', amount: -7 } : { type: 'deduct', amount: 7 })),
    );
    expect(responses.filter((r) => r.status === 201)).toHaveLength(7);
    expect(responses.filter((r) => r.status === 422)).toHaveLength(13);
    const after = await customer(key, id);
    expect(after.points_balance).toBe(1);
    expect(after.points_balance).toBe(after.lifetime_earned - after.lifetime_redeemed);
    expectRunningBalances(await ledger(key, id));
  });

  it('creates exactly one customer when parallel requests share an email in different cases', async () => {
    const { private_key: key } = await t.business();
    const spellings = ['dup@example.com', 'DUP@example.com', 'Dup@Example.com', 'dup@EXAMPLE.COM'];
    const responses = await Promise.all(
      Array.from({ length: 16 }, (_, i) => t.request('POST', '/api/v1/customers', { key, body: { email: spellings[i % 4] } })),
    );
    const created = responses.filter((r) => r.status === 201);
    expect(created).toHaveLength(1);
    for (const r of responses.filter((x) => x.status !== 201)) {
      expect(r.status).toBe(409);
      expect(r.body).toMatchObject({ code: 'customer_exists', customer_id: created[0]!.body.id });
    }
    const list = await t.request('GET', '/api/v1/customers', { key });
    expect(list.body.map((c: { id: string }) => c.id)).toEqual([created[0]!.body.id]);
  });

  it('creates exactly one customer when parallel requests share an external_reference', async () => {
    const { private_key: key } = await t.business();
    const responses = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        t.request('POST', '/api/v1/customers', { key, body: { email: `ext-${i}@example.com`, external_reference: 'crm-1' } }),
      ),
    );
    expect(responses.filter((r) => r.status === 201)).toHaveLength(1);
    expect(responses.filter((r) => r.status === 409)).toHaveLength(11);
    // The losers' e-mails were not taken.
    const list = await t.request('GET', '/api/v1/customers', { key });
    expect(list.body).toHaveLength(1);
    const loser = responses.findIndex((r) => r.status === 409);
    const retried = await t.request('POST', '/api/v1/customers', { key, body: { email: `ext-${loser}@example.com` } });
    expect(retried.status).toBe(201);
  });

  it('lets two parallel PATCHes race for one free email: exactly one gets it', async () => {
    const { private_key: key } = await t.business();
    const ids = await Promise.all(Array.from({ length: 6 }, (_, i) => t.newCustomer(key, { email: `racer-${i}@example.com` })));
    const responses = await Promise.all(ids.map((id) => t.request('PATCH', `/api/v1/customers/${id}`, { key, body: { email: 'prize@example.com' } })));
    const won = responses.filter((r) => r.status === 200);
    expect(won).toHaveLength(1);
    for (const r of responses.filter((x) => x.status !== 200)) {
      expect(r.status).toBe(409);
      expect(r.body).toMatchObject({ code: 'customer_exists', customer_id: won[0]!.body.id });
    }
    const holders = await t.request('GET', '/api/v1/customers?email=prize%40example.com', { key });
    expect(holders.body.map((c: { id: string }) => c.id)).toEqual([won[0]!.body.id]);
    // Everyone else kept their own e-mail, still reserved.
    const losers = ids.filter((id) => id !== won[0]!.body.id);
    for (const id of losers) {
      const c = await customer(key, id);
      expect(c.email).toMatch(/^racer-\d@example\.com$/);
      const clash = await t.request('POST', '/api/v1/customers', { key, body: { email: c.email } });
      expect(clash.body).toMatchObject({ code: 'customer_exists', customer_id: id });
    }
  });

  it('ends parallel mixed traffic on many customers with read models that agree with the event streams', async () => {
    const { private_key: key } = await t.business();
    const ids = await Promise.all(Array.from({ length: 8 }, (_, i) => t.newCustomer(key, { email: `mixed-${i}@example.com` })));

    // A deterministic pseudo-random mix (LCG), so a failure reproduces.
    let seed = 12345;
    const rand = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    const requests: Array<{ id: string; run: () => Promise<TestResponse> }> = [];
    for (let i = 0; i < 160; i++) {
      const id = ids[rand(ids.length)]!;
      const kind = rand(10);
      const amount = 1 + rand(60);
      let body: Record<string, unknown>;
      if (kind < 4) body = { type: 'earn', amount, reference: rand(3) === 0 ? `ref-${rand(5)}` : undefined };
      else if (kind < 7) body = { type: 'deduct', amount };
      else if (kind < 9) body = { type: 'adjust', amount: rand(2) ? amount : -amount };
      else {
        requests.push({ id, run: () => t.request('PATCH', `/api/v1/customers/${id}`, { key, body: { first_name: `N${i}` } }) });
        continue;
      }
      if (body.reference === undefined) delete body.reference;
      requests.push({ id, run: () => transact(key, id, body) });
    }
    const responses = await Promise.all(requests.map((r) => r.run()));
    for (const r of responses) expect([200, 201, 409, 422], r.text).toContain(r.status);
    for (const r of responses.filter((x) => x.status === 409)) expect(r.body.code).toBe('duplicate_transaction');
    for (const r of responses.filter((x) => x.status === 422)) expect(r.body.code).toBe('insufficient_points');

    for (const id of ids) {
      const events = await stream(key, id);
      const { balance, earned, redeemed, after } = foldPoints(events);
      for (const step of after) {
        expect(step.event.data.balance).toBe(step.balance);
        expect(step.balance).toBeGreaterThanOrEqual(0);
      }
      const read = await customer(key, id);
      expect({ balance: read.points_balance, earned: read.lifetime_earned, redeemed: read.lifetime_redeemed }).toEqual({ balance, earned, redeemed });

      const summary = await t.request('GET', `/api/v1/customers/${id}/summary`, { key });
      expect(summary.body.points).toEqual({ balance, lifetime_earned: earned, lifetime_redeemed: redeemed, pending: 0, lifetime_expired: 0, next_expiring: null });

      const lines = await ledger(key, id);
      const pointEvents = events.filter((e) => e.type.startsWith('Points'));
      expect(lines.map((l) => l.id)).toEqual(pointEvents.map((e) => e.data.transaction_id));
      expectRunningBalances(lines);

      // Each successful points request for this customer is one event, and each refused one is none.
      const succeeded = responses.filter((r, i) => requests[i]!.id === id && r.status === 201);
      expect(succeeded.map((r) => r.body.id).sort()).toEqual(pointEvents.map((e) => e.data.transaction_id).sort());

      const positions = events.map((e) => e.position);
      expect(positions).toEqual(positions.map((_, i) => i));
    }
  });

  describe('on two app instances sharing one database', () => {
    // A second, independent instance of the service (its own in-process locks, caches and
    // projection runners) on the same database, as a second server process would be.
    let second: Services;
    let secondApp: ReturnType<typeof createApp>;
    beforeAll(async () => {
      second = await createServices({
        config: { ...loadConfig({}), logLevel: 'silent' },
        database: { ...t.services.database, close: async () => {} },
        runProjections: true,
        logger: pino({ level: 'silent' }),
      });
      secondApp = createApp(second);
    });
    afterAll(() => second.close());

    /** A request through instance 0 (the test app) or instance 1 (the second app). */
    async function via(instance: number, method: string, path: string, key: string, body?: unknown): Promise<TestResponse> {
      if (instance === 0) return t.request(method, path, { key, ...(body === undefined ? {} : { body }) });
      const headers: Record<string, string> = { 'x-api-key': key };
      if (body !== undefined) headers['content-type'] = 'application/json';
      const response = await secondApp.request(path, { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
      const text = await response.text();
      return { status: response.status, headers: response.headers, body: text ? JSON.parse(text) : undefined, text };
    }

    it('applies parallel earns split across both instances exactly once each', async () => {
      const { private_key: key } = await t.business();
      const id = await t.newCustomer(key, { email: 'two-earn@example.com' });
      const amounts = Array.from({ length: 30 }, (_, i) => i + 1);
      const responses = await Promise.all(
        amounts.map((amount) => via(amount % 2, 'POST', `/api/v1/customers/${id}/points/transaction`, key, { type: 'earn', amount })),
      );
      expect(responses.map((r) => r.status)).toEqual(amounts.map(() => 201));
      const lines = await ledger(key, id);
      expect(lines).toHaveLength(30);
      expect(expectRunningBalances(lines)).toBe(465);
      expect((await customer(key, id)).points_balance).toBe(465);
    });

    it('applies a burst of earns on one customer through one instance, with the other earning on it meanwhile, exactly once each', async () => {
      // Instance 0 queues each earn on the state after the one before it, not yet committed; the
      // other instance's earns take revisions such a chain expected, so the chain must fail and
      // start again from what is stored (no earn lost, none counted on a state that never was).
      const { private_key: key } = await t.business();
      const id = await t.newCustomer(key, { email: 'hot-earn@example.com' });
      const requests = Array.from({ length: 64 }, (_, i) => ({ instance: i % 4 === 3 ? 1 : 0, amount: i + 1 }));
      const responses = await Promise.all(
        requests.map(({ instance, amount }) => via(instance, 'POST', `/api/v1/customers/${id}/points/transaction`, key, { type: 'earn', amount })),
      );
      expect(responses.map((r) => r.status)).toEqual(requests.map(() => 201));
      const total = requests.reduce((sum, r) => sum + r.amount, 0);
      const lines = await ledger(key, id);
      expect(lines.map((l) => l.id).sort()).toEqual(responses.map((r) => r.body.id).sort());
      expect(expectRunningBalances(lines)).toBe(total);
      expect((await customer(key, id)).points_balance).toBe(total);
      // Each answer's balance is the one its own event recorded.
      const recorded = new Map(lines.map((l) => [l.id, l.balance]));
      for (const r of responses) expect(r.body.balance).toBe(recorded.get(r.body.id));
    });

    it('creates one transaction for one reference across both instances', async () => {
      const { private_key: key } = await t.business();
      const id = await t.newCustomer(key, { email: 'two-ref@example.com' });
      const responses = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          via(i % 2, 'POST', `/api/v1/customers/${id}/points/transaction`, key, { type: 'earn', amount: 5 + i, reference: 'shared' }),
        ),
      );
      const created = responses.filter((r) => r.status === 201);
      expect(created).toHaveLength(1);
      for (const r of responses.filter((x) => x.status !== 201)) {
        expect(r.status).toBe(409);
        expect(r.body.code).toBe('duplicate_transaction');
        expect(r.body.transaction.id).toBe(created[0]!.body.id);
      }
      expect(await ledger(key, id)).toHaveLength(1);
    });

    it('never lets parallel deducts across both instances overdraw the balance', async () => {
      const { private_key: key } = await t.business();
      const id = await t.newCustomer(key, { email: 'two-deduct@example.com' });
      expect((await via(1, 'POST', `/api/v1/customers/${id}/points/transaction`, key, { type: 'earn', amount: 100 })).status).toBe(201);
      const responses = await Promise.all(
        Array.from({ length: 30 }, (_, i) => via(i % 2, 'POST', `/api/v1/customers/${id}/points/transaction`, key, { type: 'deduct', amount: 10 })),
      );
      expect(responses.filter((r) => r.status === 201)).toHaveLength(10);
      for (const r of responses.filter((x) => x.status !== 201)) expect(r.body.code).toBe('insufficient_points');
      expect(await customer(key, id)).toMatchObject({ points_balance: 0, lifetime_redeemed: 100 });
      expect(expectRunningBalances(await ledger(key, id))).toBe(0);
    });

    it('creates one customer for one email across both instances', async () => {
      const { private_key: key } = await t.business();
      const responses = await Promise.all(
        Array.from({ length: 12 }, (_, i) => via(i % 2, 'POST', '/api/v1/customers', key, { email: i % 3 ? 'Both@example.com' : 'both@EXAMPLE.com' })),
      );
      const created = responses.filter((r) => r.status === 201);
      expect(created).toHaveLength(1);
      for (const r of responses.filter((x) => x.status !== 201)) {
        expect(r.body).toMatchObject({ code: 'customer_exists', customer_id: created[0]!.body.id });
      }
    });

  });
});

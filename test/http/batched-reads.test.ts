import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { customerQueries } from '../../src/projections/customers/customers-queries.js';
import { startTestApp, type TestApp } from '../support/test-app.js';

// Customers and summaries asked for at once are read in one statement (src/db/batched-reads.ts):
// each answer must still be its own customer's, within its own business.
describe('reads asked for at once', () => {
  let t: TestApp;
  let a: { businessId: string; key: string; customers: string[] };
  let b: { businessId: string; key: string; customers: string[] };

  beforeAll(async () => {
    t = await startTestApp();
    const seed = async (tag: string) => {
      const business = await t.business();
      const customers: string[] = [];
      for (let i = 0; i < 6; i++) {
        const id = await t.newCustomer(business.private_key, { email: `${tag}${i}@example.com`, first_name: `${tag}${i}` });
        for (let n = 0; n <= i; n++) {
          const earn = await t.request('POST', `/api/v1/customers/${id}/points/transaction`, {
            key: business.private_key,
            body: { type: 'earn', amount: 10 * (i + 1) + n, description: `${tag}${i} #${n}` },
          });
          expect(earn.status).toBe(201);
        }
        customers.push(id);
      }
      return { businessId: business.business_id, key: business.private_key, customers };
    };
    a = await seed('a');
    b = await seed('b');
  });
  afterAll(() => t?.close());

  /** What each of a business's customers holds, as its earns made it. */
  const expected = (tag: string, i: number) => {
    const amounts = Array.from({ length: i + 1 }, (_, n) => 10 * (i + 1) + n);
    return { first_name: `${tag}${i}`, balance: amounts.reduce((x, y) => x + y, 0), activity: amounts.map((_, n) => `${tag}${i} #${n}`).reverse() };
  };

  it('answers each of many concurrent GETs with its own customer, and 404 across businesses', async () => {
    const asks = [
      ...a.customers.map((id, i) => ({ key: a.key, id, want: expected('a', i) })),
      ...b.customers.map((id, i) => ({ key: b.key, id, want: expected('b', i) })),
      ...a.customers.map((id, i) => ({ key: a.key, id, want: expected('a', i) })), // the same customers again, in the same batch
      { key: b.key, id: a.customers[0]!, want: null }, // another business's customer
      { key: a.key, id: 'cust_doesnotexist0000000', want: null },
    ];
    const answers = await Promise.all(asks.map((ask) => t.request('GET', `/api/v1/customers/${ask.id}`, { key: ask.key })));
    answers.forEach((answer, i) => {
      const { id, want } = asks[i]!;
      if (!want) return expect(answer.status).toBe(404);
      expect(answer.status).toBe(200);
      expect({ id: answer.body.id, first_name: answer.body.first_name, balance: answer.body.points_balance }).toEqual({ id, first_name: want.first_name, balance: want.balance });
    });
  });

  it('answers each of many concurrent summaries with its own points and recent activity, newest first', async () => {
    const asks = [
      ...b.customers.map((id, i) => ({ key: b.key, id, want: expected('b', i) })),
      ...a.customers.map((id, i) => ({ key: a.key, id, want: expected('a', i) })),
      { key: a.key, id: b.customers[5]!, want: null },
    ];
    const answers = await Promise.all(asks.map((ask) => t.request('GET', `/api/v1/customers/${ask.id}/summary`, { key: ask.key })));
    answers.forEach((answer, i) => {
      const { id, want } = asks[i]!;
      if (!want) return expect(answer.status).toBe(404);
      expect(answer.status).toBe(200);
      expect(answer.body.customer.id).toBe(id);
      expect(answer.body.points.balance).toBe(want.balance);
      expect(answer.body.recent_activity.map((r: { description: string }) => r.description)).toEqual(want.activity);
    });
  });

  it('fails only the read whose value the database refuses, when it went with others', async () => {
    // The HTTP layer refuses such ids before any query (storable-url.ts); the reads below go
    // straight to the queries, as a value nobody validated would.
    const reads = customerQueries(t.services.db);
    const { businessId } = a;
    const answers = await Promise.allSettled([reads.get(businessId, a.customers[1]!), reads.get(businessId, 'cust_\u0000bad'), reads.get(businessId, a.customers[2]!)]);
    expect(answers.map((x) => x.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(answers.map((x) => (x.status === 'fulfilled' ? x.value?.id : 'refused'))).toEqual([a.customers[1], 'refused', a.customers[2]]);
  });
});

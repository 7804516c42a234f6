import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ProvisionedBusiness, setBusinessPlan } from '../../src/cli/provision.js';
import { streams } from '../../src/events/streams.js';
import { startTestApp, type TestApp } from '../support/test-app.js';

const FREE_LIMIT = 1000;

describe('plan limit on customers', () => {
  let t: TestApp;
  /** The free business the first case fills to its limit (the next cases need one full: filling takes seconds). */
  let full: ProvisionedBusiness | undefined;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  const createCustomer = (key: string, email: string) => t.request('POST', '/api/v1/customers', { key, body: { email } });

  /** Creates customers `from`..`to - 1` with at most `width` requests in flight; returns the statuses. */
  async function createMany(key: string, prefix: string, from: number, to: number, width = 8): Promise<number[]> {
    const statuses: number[] = [];
    let next = from;
    const worker = async () => {
      while (next < to) {
        const n = next++;
        const response = await createCustomer(key, `${prefix}-${n}@example.com`);
        statuses.push(response.status);
      }
    };
    await Promise.all(Array.from({ length: width }, worker));
    return statuses;
  }

  /** Every customer of the business, by walking the pages. */
  async function countCustomers(key: string): Promise<number> {
    let count = 0;
    let path: string | null = '/api/v1/customers?limit=200';
    while (path) {
      const page = await t.request('GET', path, { key });
      expect(page.status).toBe(200);
      count += page.body.length;
      path = /<([^>]+)>;\s*rel="next"/.exec(page.headers.get('link') ?? '')?.[1] ?? null;
    }
    return count;
  }

  // About 1,000 serialized creations: typically 10–25 s. The generous timeout is not a speed check.
  it('lets a free business create 1,000 customers, lets exactly 5 of 20 racing past 995 through, and refuses the 1,001st', async () => {
    full = await t.business('free');
    const { private_key: key } = full;

    // Failed creations (a taken e-mail, an invalid body) must not use up plan room.
    expect((await createCustomer(key, 'free-0@example.com')).status).toBe(201);
    const duplicates = await Promise.all(Array.from({ length: 10 }, () => createCustomer(key, 'FREE-0@example.com')));
    expect(duplicates.map((r) => r.status)).toEqual(Array(10).fill(409));
    const invalid = await Promise.all(
      Array.from({ length: 10 }, () => t.request('POST', '/api/v1/customers', { key, body: { first_name: 'no contact' } })),
    );
    expect(invalid.map((r) => r.status)).toEqual(Array(10).fill(400));

    const first = await createMany(key, 'free', 1, 995);
    expect(first.filter((s) => s === 201)).toHaveLength(994);
    expect(await countCustomers(key)).toBe(995);

    const race = await Promise.all(Array.from({ length: 20 }, (_, i) => createCustomer(key, `race-${i}@example.com`)));
    const won = race.filter((r) => r.status === 201);
    const refused = race.filter((r) => r.status !== 201);
    expect(won).toHaveLength(5);
    expect(refused).toHaveLength(15);
    for (const r of refused) {
      expect(r.status).toBe(403);
      expect(r.body).toMatchObject({
        code: 'plan_limit_reached',
        message: expect.any(String),
        request_id: expect.stringMatching(/^req_/),
      });
    }
    expect(await countCustomers(key)).toBe(FREE_LIMIT);

    const overflow = await createCustomer(key, 'one-too-many@example.com');
    expect(overflow.status).toBe(403);
    expect(overflow.body.code).toBe('plan_limit_reached');
    expect(await countCustomers(key)).toBe(FREE_LIMIT);

    // A refused creation leaves nothing behind: its e-mail is not taken.
    const found = await t.request('GET', '/api/v1/customers?email=one-too-many@example.com', { key });
    expect(found.body).toEqual([]);
    // Nor does the limit stop reads and updates of the customers it holds.
    const patched = await t.request('PATCH', `/api/v1/customers/${won[0]!.body.id}`, { key, body: { first_name: 'Still' } });
    expect(patched.status).toBe(200);
  }, 120_000);

  it('lets a free business at its limit add customers once set-plan moves it to unlimited; set-plan free holds it to the limit again', async () => {
    expect(full, 'needs the business the first case filled').toBeDefined();
    const { business_id: businessId, private_key: key } = full!;
    const plan = async () => (await t.services.queries.access.business(businessId))?.plan;
    expect((await createCustomer(key, 'before-upgrade@example.com')).status).toBe(403);

    // What `loyalty businesses set-plan BUSINESS_ID unlimited` runs.
    expect(await setBusinessPlan(t.services, businessId, 'unlimited')).toEqual({ changed: true, customers: FREE_LIMIT });
    expect(await plan()).toBe('unlimited');
    const upgraded = await Promise.all(Array.from({ length: 3 }, (_, i) => createCustomer(key, `after-upgrade-${i}@example.com`)));
    expect(upgraded.map((r) => r.status)).toEqual([201, 201, 201]);
    expect(await countCustomers(key)).toBe(FREE_LIMIT + 3);
    // Once there, the same plan again writes nothing.
    expect(await setBusinessPlan(t.services, businessId, 'unlimited')).toEqual({ changed: false, customers: FREE_LIMIT + 3 });

    // Back to free: counted from the 1,003 it has, so it is over the limit and adds none.
    expect(await setBusinessPlan(t.services, businessId, 'free')).toEqual({ changed: true, customers: FREE_LIMIT + 3 });
    expect(await t.services.queries.access.business(businessId)).toMatchObject({ plan: 'free', customer_count: FREE_LIMIT + 3 });
    const refused = await createCustomer(key, 'after-downgrade@example.com');
    expect(refused.status).toBe(403);
    expect(refused.body.code).toBe('plan_limit_reached');
    expect(await countCustomers(key)).toBe(FREE_LIMIT + 3);

    const changes = (await t.services.store.readStream(streams.business(businessId)))
      .filter((e) => e.type === 'BusinessPlanChanged')
      .map((e) => e.data);
    expect(changes).toEqual([
      { plan: 'unlimited', previous_plan: 'free', customer_count: FREE_LIMIT },
      { plan: 'free', previous_plan: 'unlimited', customer_count: FREE_LIMIT + 3 },
    ]);
  });

  it('moves an unlimited business with few customers to free, counting on from the customers it has', async () => {
    const business = await t.business('unlimited');
    const created = await Promise.all(Array.from({ length: 4 }, (_, i) => createCustomer(business.private_key, `few-${i}@example.com`)));
    expect(created.map((r) => r.status)).toEqual(Array(4).fill(201));
    expect(await setBusinessPlan(t.services, business.business_id, 'free')).toEqual({ changed: true, customers: 4 });
    expect((await createCustomer(business.private_key, 'fifth@example.com')).status).toBe(201);
    expect(await t.services.queries.access.business(business.business_id)).toMatchObject({ plan: 'free', customer_count: 5 });
  });

  it('keeps the limit per business: a full free business does not stop another free business', async () => {
    // The business of the case above is full; a new free business still starts at zero.
    const { private_key: key } = await t.business('free');
    const created = await createCustomer(key, 'one-too-many@example.com');
    expect(created.status).toBe(201);
  });

  // Filling an unlimited business past 1,000 over HTTP would double this file's run time (registration
  // is serialized per business). Instead: the limit is enforced by counting each new customer on the
  // business's stream (the free case above shows the count refuses the 1,001st); an unlimited business's
  // creations are never counted, so no count of them can reach a limit. The decider's own tests cover
  // CountCustomer on an unlimited plan at any count (test/commands/business-decider.test.ts).
  it('never counts the customers of an unlimited business, while counting each of a free one', async () => {
    const free = await t.business('free');
    const unlimited = await t.business('unlimited');
    const created = await Promise.all(
      [free, unlimited].flatMap((b) => Array.from({ length: 6 }, (_, i) => createCustomer(b.private_key, `counted-${i}@example.com`))),
    );
    expect(created.map((r) => r.status)).toEqual(Array(12).fill(201));

    const counted = async (businessId: string) =>
      (await t.services.store.readStream(streams.business(businessId)))
        .filter((e) => e.type === 'BusinessCustomerCounted')
        .map((e) => (e.data as { customer_count: number }).customer_count);
    expect(await counted(free.business_id)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(await counted(unlimited.business_id)).toEqual([]);
  });
});

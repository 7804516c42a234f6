import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLoyaltyClient, listAll, unwrap } from '../../client/src/index.js';
import { expectError } from '../support/expectations.js';
import { startTestApp, type TestApp } from '../support/test-app.js';

/** Three months of one business, each write made at its month's first day (the app's clock). */
const MONTHS = ['2026-01-01T10:00:00.000Z', '2026-02-01T10:00:00.000Z', '2026-03-01T10:00:00.000Z'];
const FEBRUARY = 'created_after=2026-01-15T00:00:00Z&created_before=2026-02-15T00:00:00%2B00:00';

describe('created_after / created_before on the lists analysts read by date', () => {
  let t: TestApp;
  let key: string;
  let now = new Date(MONTHS[0]!);
  const made: Array<{ customer: string; event: string; redemption: string }> = [];
  let regular: string;

  beforeAll(async () => {
    t = await startTestApp({ clock: { now: () => now } });
    key = (await t.business()).private_key;
    const post = async (path: string, body: unknown) => {
      const response = await t.request('POST', path, { key, body });
      expect(response.status, response.text).toBe(201);
      return response.body;
    };
    await post('/api/v1/event-types', { name: 'visit', display_name: 'Visit', default_points: 5 });
    const reward = await post('/api/v1/rewards', { title: 'Coffee', points_cost: 10, reward_type: 'digital' });
    regular = (await post('/api/v1/customers', { email: 'regular@example.com' })).id;
    for (const [i, month] of MONTHS.entries()) {
      now = new Date(month);
      const customer = await post('/api/v1/customers', { email: `month-${i}@example.com` });
      await post(`/api/v1/customers/${regular}/points/transaction`, { type: 'earn', amount: 100 + i });
      const event = await post('/api/v1/events', { customer_id: customer.id, event_type: 'visit', reference: `visit-${i}` });
      const redemption = await post(`/api/v1/customers/${regular}/redemptions`, { reward_id: reward.id });
      made.push({ customer: customer.id, event: event.id, redemption: redemption.id });
    }
  });
  afterAll(() => t.close());

  const ids = async (path: string) => {
    const response = await t.request('GET', path, { key });
    expect(response.status, response.text).toBe(200);
    return (response.body as Array<{ id: string }>).map((item) => item.id);
  };

  it('customers: only those registered inside the window', async () => {
    expect(await ids(`/api/v1/customers?${FEBRUARY}`)).toEqual([made[1]!.customer]);
    // Each bound alone; both exclusive (a customer made at 10:00 exactly is outside "after 10:00").
    expect(await ids('/api/v1/customers?created_after=2026-02-01T10:00:00.000Z')).toEqual([made[2]!.customer]);
    expect(await ids('/api/v1/customers?created_before=2026-01-01T10:00:00.001Z')).toHaveLength(2);
  });

  it('transactions, events and redemptions: only the lines inside the window', async () => {
    const ledger = await t.request('GET', `/api/v1/customers/${regular}/transactions?${FEBRUARY}`, { key });
    expect(ledger.body.map((line: { type: string; amount: number }) => [line.type, line.amount])).toEqual([
      ['earn', 101],
      ['redemption', 10],
    ]);
    expect(await ids(`/api/v1/events?${FEBRUARY}`)).toEqual([made[1]!.event]);
    expect(await ids(`/api/v1/events?customer_id=${made[2]!.customer}&${FEBRUARY}`)).toEqual([]);
    expect(await ids(`/api/v1/customers/${regular}/redemptions?${FEBRUARY}`)).toEqual([made[1]!.redemption]);
  });

  it('keeps the window in the Link of the next page', async () => {
    const first = await t.request('GET', `/api/v1/customers/${regular}/redemptions?limit=1&created_after=2026-01-15T00:00:00Z`, { key });
    expect(first.body.map((r: { id: string }) => r.id)).toEqual([made[1]!.redemption]);
    const link = first.headers.get('link')!;
    expect(link).toContain('created_after=2026-01-15T00%3A00%3A00Z');
    const next = await t.request('GET', link.slice(1, link.indexOf('>')), { key });
    expect(next.body.map((r: { id: string }) => r.id)).toEqual([made[2]!.redemption]);
    expect(next.headers.get('link')).toBeNull();
  });

  it('refuses a bound that is not an RFC 3339 time, and a window that ends before it starts', async () => {
    for (const query of ['created_after=yesterday', 'created_after=2026-01-01', 'created_before=2026-13-01T00:00:00Z', 'created_after=1767225600']) {
      const response = await t.request('GET', `/api/v1/events?${query}`, { key });
      expectError(response, 400, 'validation_error');
      expect(response.body.details[0].path).toBe(`query.${query.slice(0, query.indexOf('='))}`);
    }
    const swapped = await t.request('GET', `/api/v1/customers?created_after=2026-02-15T00:00:00Z&created_before=2026-01-15T00:00:00Z`, { key });
    expectError(swapped, 400, 'validation_error');
    expect(swapped.body.details).toEqual([{ path: 'query.created_before', message: 'must be later than created_after' }]);
    const empty = await t.request('GET', `/api/v1/customers/${regular}/transactions?created_after=2026-02-01T10:00:00Z&created_before=2026-02-01T10:00:00Z`, { key });
    expectError(empty, 400, 'validation_error');
  });

  it('is typed in the client: the window is part of each list’s query', async () => {
    // The client always passes a Request. app.fetch takes it as it is; app.request would take it for
    // a URL unless it is an instance of the global Request, which @hono/node-server replaces once a
    // file of the same worker has listened with it (the workers share one module graph).
    const api = createLoyaltyClient({ baseUrl: 'http://loyalty.test', apiKey: key, fetch: (request) => Promise.resolve(t.app.fetch(request as Request)) });
    const customers = await unwrap(api.GET('/api/v1/customers', { params: { query: { created_after: '2026-01-15T00:00:00Z' } } }));
    expect(customers.map((c) => c.id)).toEqual([made[1]!.customer, made[2]!.customer]);
    const lines = [];
    const window = { created_after: '2026-01-15T00:00:00Z', created_before: '2026-02-15T00:00:00Z', limit: 1 };
    for await (const line of listAll(api, '/api/v1/customers/{customer_id}/transactions', { path: { customer_id: regular }, query: window })) {
      lines.push(line.amount);
    }
    expect(lines).toEqual([101, 10]);
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { instanceBeside } from '../support/instance-beside.js';
import { startReceiver } from '../support/webhook-receiver.js';
import { startTestApp, type TestApp } from '../support/test-app.js';

/** The value of one sample of the Prometheus text, 0 when absent. */
function sample(text: string, name: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line ? Number(line.slice(name.length + 1)) : 0;
}

describe('/metrics counters for operators', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ config: { webhookAllowPrivate: true, rateLimitRps: 1, rateLimitBurst: 30 } });
  });
  afterAll(() => t.close());
  const metrics = async () => (await t.app.request('/metrics')).text();

  it('has the process and Node defaults', async () => {
    const text = await metrics();
    for (const name of ['loyalty_process_cpu_seconds_total', 'loyalty_process_resident_memory_bytes', 'loyalty_nodejs_eventloop_lag_seconds']) {
      expect(text).toContain(`\n${name} `);
    }
  });

  it('counts idempotent replays, webhook attempts by outcome and rate-limited requests', async () => {
    const receiver = await startReceiver();
    try {
      const { private_key: key } = await t.business();
      expect((await t.request('POST', '/api/v1/webhooks', { key, body: { url: receiver.url, events: ['customer.created'] } })).status).toBe(201);
      const create = () => t.request('POST', '/api/v1/customers', { key, body: { email: 'metrics@example.com' }, headers: { 'Idempotency-Key': 'm-1' } });
      expect((await create()).status).toBe(201);
      expect((await create()).headers.get('Idempotent-Replayed')).toBe('true');
      expect(sample(await metrics(), 'loyalty_idempotent_replays_total')).toBe(1);
      await expect.poll(async () => sample(await metrics(), 'loyalty_webhook_deliveries_total{outcome="delivered"}'), { timeout: 10_000 }).toBe(1);

      const answers = await Promise.all(Array.from({ length: 40 }, () => t.request('GET', '/api/v1/tiers', { key })));
      const refused = answers.filter((a) => a.status === 429).length;
      expect(refused).toBeGreaterThan(0);
      expect(sample(await metrics(), 'loyalty_rate_limited_requests_total')).toBe(refused);
    } finally {
      await receiver.close();
    }
  });

  it('counts where state loads found their state, and what the state cache holds within its bound (LOYALTY_STATE_CACHE_LOTS)', async () => {
    expect(t.services.stateCache.bounds).toEqual({ weight: loadConfig({}).stateCacheLots, states: 50_000 });
    const { private_key: key } = await t.business();
    const customer = await t.request('POST', '/api/v1/customers', { key, body: { email: 'cache@example.com' } });
    const before = await metrics();
    for (let i = 0; i < 3; i++) {
      expect((await t.request('POST', `/api/v1/customers/${customer.body.id}/points/transaction`, { key, body: { type: 'earn', amount: 10 } })).status).toBe(201);
    }
    const after = await metrics();
    // The first earn found the new customer in memory (its registration left it there), and so did the next two.
    const fromMemory = (text: string) => sample(text, 'loyalty_state_loads_total{from="memory"}');
    expect(fromMemory(after) - fromMemory(before)).toBeGreaterThanOrEqual(3);
    expect(sample(after, 'loyalty_state_cache_lots')).toBeGreaterThanOrEqual(3);
    expect(sample(after, 'loyalty_state_cache_states')).toBeGreaterThan(0);
    expect(after).toContain('loyalty_state_loads_total{from="snapshot"}');
    expect(after).toContain('loyalty_state_loads_total{from="log"}');
  });

  it('counts writes decided again because another writer moved the stream first', async () => {
    const { private_key: key } = await t.business();
    const other = await instanceBeside(t);
    try {
      const customer = await t.request('POST', '/api/v1/customers', { key, body: { email: 'conflict@example.com' } });
      const earn = (request: typeof t.request) => request('POST', `/api/v1/customers/${customer.body.id}/points/transaction`, { key, body: { type: 'earn', amount: 10 } });
      expect((await earn(t.request)).status).toBe(201); // this instance now holds the customer's state
      const elsewhere = await other.request('POST', `/api/v1/customers/${customer.body.id}/points/transaction`, key, { type: 'earn', amount: 10 });
      expect(elsewhere.status).toBe(201);
      const retried = () => metrics().then((text) => sample(text, 'loyalty_write_conflicts_retried_total{how="reload"}') + sample(text, 'loyalty_write_conflicts_retried_total{how="in_batch"}'));
      const before = await retried();
      // Decided on the state held here, one revision behind: the append meets the other instance's earn.
      const third = await earn(t.request);
      expect(third.status).toBe(201);
      expect(third.body.balance).toBe(30);
      expect(await retried()).toBe(before + 1);
      // On a PostgreSQL server the batch decides it again while holding the stream; on PGlite the change is run again.
      const how = t.services.database.kind === 'postgres' ? 'in_batch' : 'reload';
      expect(sample(await metrics(), `loyalty_write_conflicts_retried_total{how="${how}"}`)).toBeGreaterThanOrEqual(1);
    } finally {
      await other.services.close();
    }
  });
});

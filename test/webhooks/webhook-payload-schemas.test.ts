import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { streams } from '../../src/events/streams.js';
import { WEBHOOK_EVENT_TYPES } from '../../src/events/webhook-events.js';
import { WEBHOOK_DATA_EXAMPLES, WEBHOOK_DATA_SCHEMAS } from '../../src/webhooks/webhook-payload-schemas.js';
import { decodeAll, ofTypes } from '../../src/events/decode.js';
import { ANNOUNCED, webhookPayloadOf } from '../../src/webhooks/webhook-payloads.js';
import { startTestApp, type TestApp } from '../support/test-app.js';

describe('webhook payload schemas (the source of the OpenAPI webhooks and docs/webhooks.md)', () => {
  let t: TestApp;
  let at = Date.parse('2026-05-01T10:00:00.000Z');
  const clock = { now: () => new Date(at) };
  beforeAll(async () => {
    t = await startTestApp({ runDispatcher: false, clock });
  });
  afterAll(() => t.close());

  it('has an example per event type that its schema accepts, with no field the schema lacks', () => {
    for (const type of WEBHOOK_EVENT_TYPES) {
      expect(() => WEBHOOK_DATA_SCHEMAS[type].strict().parse(WEBHOOK_DATA_EXAMPLES[type]), type).not.toThrow();
    }
  });

  it('describes exactly what the service sends for every event type', async () => {
    const { private_key: key } = await t.business();
    const call = async (method: string, path: string, body?: unknown) => {
      const res = await t.request(method, path, { key, body });
      expect(res.status, `${method} ${path}: ${res.text}`).toBeLessThan(300);
      return res.body;
    };
    await call('POST', '/api/v1/tiers', { name: 'Silver', points_threshold: 100, multiplier: 1.5 });
    await call('POST', '/api/v1/event-types', { name: 'purchase', display_name: 'Purchase', default_points: 5 });
    const reward = await call('POST', '/api/v1/rewards', { title: 'Coffee', points_cost: 10, reward_type: 'physical' });
    const customer = await call('POST', '/api/v1/customers', { email: 'payloads@example.com' });
    const points = `/api/v1/customers/${customer.id}/points/transaction`;
    await call('PATCH', '/api/v1/program', { tier_qualification: { mode: 'rolling', window_days: 30 } });
    const earned = await call('POST', points, { type: 'earn', amount: 150, reference: 'o-1' });
    await call('POST', points, { type: 'deduct', amount: 5 });
    await call('POST', points, { type: 'adjust', amount: -5 });
    await call('POST', '/api/v1/events', { customer_id: customer.id, event_type: 'purchase', properties: { amount: 3 } });
    const redemption = await call('POST', `/api/v1/customers/${customer.id}/redemptions`, { reward_id: reward.id });
    await call('POST', `/api/v1/customers/${customer.id}/redemptions/${redemption.id}/cancel`);
    const day = 86_400_000;
    await call('POST', points, { type: 'earn', amount: 20, available_at: new Date(at + day).toISOString(), expires_at: new Date(at + 10 * day).toISOString() });
    await call('POST', `/api/v1/customers/${customer.id}/transactions/${earned.id}/reverse`, { amount: 5, reference: 'refund-1' });
    // The lifecycle's own events: the scheduler does the due work as the clock moves on.
    for (const days of [2, 5, 11, 45]) {
      at += days * day;
      await t.services.scheduler.runOnce();
    }

    const seen = new Set<string>();
    const announced = ofTypes(Object.keys(ANNOUNCED) as Array<keyof typeof ANNOUNCED>);
    for (const event of decodeAll(await t.services.store.readStream(streams.customer(customer.id))).filter(announced)) {
      const payload = webhookPayloadOf(event);
      if (payload.type === 'webhook.test') continue;
      seen.add(payload.type);
      const parsed = WEBHOOK_DATA_SCHEMAS[payload.type].strict().safeParse(payload.data);
      expect(parsed.error?.issues ?? [], payload.type).toEqual([]);
    }
    expect([...seen].sort()).toEqual([...WEBHOOK_EVENT_TYPES].sort());
  });
});

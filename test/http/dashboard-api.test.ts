import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { streams } from '../../src/events/streams.js';
import { statsRange } from '../../src/http/routes/stats-routes.js';
import { START } from '../../src/store/event-store.js';
import { expectError, ISO_MS } from '../support/expectations.js';
import { startTestApp, type TestApp } from '../support/test-app.js';

/** The routes the dashboard needs (CONTRACT.md §14): /me, /stats, the rule preview, a customer's audit. */
describe('dashboard API', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  const today = () => new Date().toISOString().slice(0, 10);

  async function post(key: string, path: string, body: unknown) {
    const response = await t.request('POST', path, { key, body });
    expect(response.status, response.text).toBeLessThan(300);
    return response.body;
  }

  describe('GET /me', () => {
    it('answers the signed-in key, its permissions and business, for private and public keys alike', async () => {
      const biz = await t.business('free');
      const mine = await t.request('GET', '/api/v1/me', { key: biz.private_key });
      expect(mine.status, mine.text).toBe(200);
      expect(mine.body).toEqual({
        id: expect.stringMatching(/^key_/),
        type: 'private',
        name: expect.toSatisfy((v) => v === null || typeof v === 'string'),
        key_hint: expect.any(String),
        permissions: expect.arrayContaining(['customers:write', 'points:write', 'keys:write', 'webhooks:write']),
        created_at: expect.stringMatching(ISO_MS),
        business: { id: biz.business_id, name: expect.any(String), plan: 'free', created_at: expect.stringMatching(ISO_MS) },
      });
      expect(mine.text).not.toContain(biz.private_key);
      const pub = await t.request('GET', '/api/v1/me', { key: biz.public_key });
      expect(pub.status).toBe(200);
      expect(pub.body).toMatchObject({ type: 'public', business: { id: biz.business_id } });
      expect([...pub.body.permissions].sort()).toEqual(['customers:read', 'points:read', 'rewards:read']);
    });

    it('refuses a missing or unknown key with 401', async () => {
      expectError(await t.request('GET', '/api/v1/me'), 401, 'missing_api_key');
      expectError(await t.request('GET', '/api/v1/me', { key: `sk_live_${'x'.repeat(40)}` }), 401, 'invalid_api_key');
    });
  });

  describe('GET /stats', () => {
    it("counts today's points issued and redeemed net of cancellations, what is outstanding and customers per tier", async () => {
      const { private_key: key } = await t.business();
      const gold = await post(key, '/api/v1/tiers', { name: 'Gold', points_threshold: 500, multiplier: 1 });
      const a = await post(key, '/api/v1/customers', { email: 'a@example.com' });
      const b = await post(key, '/api/v1/customers', { email: 'b@example.com' });
      await post(key, '/api/v1/customers', { email: 'c@example.com' });
      await post(key, `/api/v1/customers/${a.id}/points/transaction`, { type: 'earn', amount: 1200 });
      await post(key, `/api/v1/customers/${b.id}/points/transaction`, { type: 'earn', amount: 300 });
      await post(key, `/api/v1/customers/${b.id}/points/transaction`, { type: 'adjust', amount: -50 });
      await post(key, `/api/v1/customers/${a.id}/points/transaction`, { type: 'deduct', amount: 100 });
      const reward = await post(key, '/api/v1/rewards', { title: 'Mug', points_cost: 200, reward_type: 'physical' });
      const kept = await post(key, `/api/v1/customers/${a.id}/redemptions`, { reward_id: reward.id });
      const cancelled = await post(key, `/api/v1/customers/${a.id}/redemptions`, { reward_id: reward.id });
      await post(key, `/api/v1/customers/${a.id}/redemptions/${cancelled.id}/cancel`, {});
      expect(kept.status).toBe('completed');

      const stats = await t.request('GET', '/api/v1/stats', { key });
      expect(stats.status, stats.text).toBe(200);
      expect(stats.body.days).toHaveLength(30);
      expect(stats.body.to).toBe(today());
      expect(stats.body.days.at(-1)).toEqual({ date: today(), issued: 1450, redeemed: 300, expired: 0 });
      expect(stats.body.days.slice(0, -1).every((d: any) => d.issued === 0 && d.redeemed === 0 && d.expired === 0)).toBe(true);
      expect(stats.body.days[0].date).toBe(stats.body.from);
      expect(stats.body.customers).toBe(3);
      expect(stats.body.outstanding).toBe(1450 - 300);
      expect(stats.body.tiers).toEqual([
        { tier_id: null, name: null, points_threshold: null, customers: 2 },
        { tier_id: gold.id, name: 'Gold', points_threshold: 500, customers: 1 },
      ]);
    });

    it('answers the days asked for, another business sees none of it, and a fresh business sees zeros', async () => {
      const { private_key: key } = await t.business();
      const c = await post(key, '/api/v1/customers', { email: 'd@example.com' });
      await post(key, `/api/v1/customers/${c.id}/points/transaction`, { type: 'earn', amount: 7 });
      const one = await t.request('GET', `/api/v1/stats?from=${today()}&to=${today()}`, { key });
      expect(one.body.days).toEqual([{ date: today(), issued: 7, redeemed: 0, expired: 0 }]);
      const old = await t.request('GET', '/api/v1/stats?from=2024-02-28&to=2024-03-01', { key });
      expect(old.body.days.map((d: any) => d.date)).toEqual(['2024-02-28', '2024-02-29', '2024-03-01']);
      const other = await t.business();
      const theirs = await t.request('GET', '/api/v1/stats', { key: other.private_key });
      expect(theirs.body).toMatchObject({ customers: 0, outstanding: 0, tiers: [{ tier_id: null, customers: 0 }] });
      expect(theirs.body.days.every((d: any) => d.issued === 0)).toBe(true);
    });

    it('refuses public keys, bad dates, reversed and over-long ranges, and unknown parameters', async () => {
      const biz = await t.business();
      expectError(await t.request('GET', '/api/v1/stats', { key: biz.public_key }), 403, 'public_key_not_allowed');
      for (const query of ['from=2026-02-30', 'to=yesterday', 'from=2026-05-02&to=2026-05-01', 'from=2024-01-01&to=2025-01-01', 'days=3']) {
        expectError(await t.request('GET', `/api/v1/stats?${query}`, { key: biz.private_key }), 400, 'validation_error');
      }
      expect((await t.request('GET', '/api/v1/stats?from=2024-01-01&to=2024-12-31', { key: biz.private_key })).body.days).toHaveLength(366);
    });

    it('defaults to the 30 days up to today, or the 30 from `from`', () => {
      const now = new Date('2026-03-01T23:59:00Z');
      expect(statsRange({}, now)).toEqual({ from: '2026-01-31', to: '2026-03-01' });
      expect(statsRange({ from: '2026-01-01' }, now)).toEqual({ from: '2026-01-01', to: '2026-01-30' });
      expect(statsRange({ to: '2026-01-30' }, now)).toEqual({ from: '2026-01-01', to: '2026-01-30' });
    });
  });

  describe('POST /event-types/{name}/preview', () => {
    const rules = [
      { conditions: [{ property: 'amount', op: 'lt', value: 100 }], points_per_unit: 1, unit_property: 'amount', description: '1 per unit' },
      { conditions: [{ property: 'amount', op: 'gte', value: 100 }], points_per_unit: 2, unit_property: 'amount', max_points: 1000 },
    ];

    it('gives each rule and the total for the properties, with any key, and records nothing', async () => {
      const biz = await t.business();
      await post(biz.private_key, '/api/v1/event-types', { name: 'purchase', display_name: 'Purchase', default_points: 5, rules });
      const before = await t.services.store.countEvents(START);
      const preview = await t.request('POST', '/api/v1/event-types/purchase/preview', { key: biz.public_key, body: { properties: { amount: 150.7 } } });
      expect(preview.status, preview.text).toBe(200);
      expect(preview.body).toEqual({
        event_type: 'purchase',
        default_points: 5,
        rules: [
          { index: 0, description: '1 per unit', applies: false, points: 0 },
          { index: 1, description: null, applies: true, points: 300 },
        ],
        points: 305,
      });
      const small = await t.request('POST', '/api/v1/event-types/purchase/preview', { key: biz.private_key, body: { properties: { amount: 40 } } });
      expect(small.body.points).toBe(45);
      expect(await t.services.store.countEvents(START)).toBe(before);
    });

    it('answers 404 for an unknown type, 400 for bad properties and 422 past the most one event may award', async () => {
      const { private_key: key } = await t.business();
      await post(key, '/api/v1/event-types', { name: 'big', display_name: 'Big', default_points: 0, rules: [{ points_per_unit: 1000, unit_property: 'n' }] });
      expectError(await t.request('POST', '/api/v1/event-types/nope/preview', { key, body: { properties: {} } }), 404, 'event_type_not_found');
      expectError(await t.request('POST', '/api/v1/event-types/big/preview', { key, body: { properties: 'x' } }), 400, 'validation_error');
      expectError(await t.request('POST', '/api/v1/event-types/big/preview', { key, body: { properties: {}, extra: 1 } }), 400, 'validation_error');
      expectError(await t.request('POST', '/api/v1/event-types/big/preview', { key, body: { properties: { n: 2_000_000 } } }), 422, 'points_out_of_range');
      const restricted = await post(key, '/api/v1/keys', { type: 'private', permissions: ['customers:read'] });
      expectError(await t.request('POST', '/api/v1/event-types/big/preview', { key: restricted.key, body: { properties: {} } }), 403, 'insufficient_permissions');
    });
  });

  describe('GET /customers/{id}/audit', () => {
    it('reports an intact chain and matching read models, then the break and drift after an event is edited in the store', async () => {
      const biz = await t.business();
      const key = biz.private_key;
      const c = await post(key, '/api/v1/customers', { email: 'audit@example.com' });
      await post(key, `/api/v1/customers/${c.id}/points/transaction`, { type: 'earn', amount: 400 });
      const clean = await t.request('GET', `/api/v1/customers/${c.id}/audit`, { key });
      expect(clean.status, clean.text).toBe(200);
      expect(clean.body).toEqual({
        customer_id: c.id,
        events: 2,
        chain_intact: true,
        breaks: [],
        read_model_matches: true,
        drifts: [],
      });

      const edit = (amount: number) =>
        sql`update events set data = jsonb_set(data, '{amount}', to_jsonb(${amount}::int)) where stream_id = ${streams.customer(c.id)} and stream_position = 1`.execute(t.services.db);
      await edit(900);
      try {
        const broken = await t.request('GET', `/api/v1/customers/${c.id}/audit`, { key });
        expect(broken.body).toMatchObject({ chain_intact: false, breaks: [{ position: 1, problem: expect.any(String) }], read_model_matches: false });
        expect(broken.body.drifts).toContainEqual({ field: 'lifetime_earned', log: 900, read_model: 400 });
      } finally {
        await edit(400);
      }
      expect((await t.request('GET', `/api/v1/customers/${c.id}/audit`, { key })).body.chain_intact).toBe(true);
    });

    it("refuses public keys and another business's customer", async () => {
      const biz = await t.business();
      const c = await post(biz.private_key, '/api/v1/customers', { email: 'mine@example.com' });
      expectError(await t.request('GET', `/api/v1/customers/${c.id}/audit`, { key: biz.public_key }), 403, 'public_key_not_allowed');
      const other = await t.business();
      expectError(await t.request('GET', `/api/v1/customers/${c.id}/audit`, { key: other.private_key }), 404, 'customer_not_found');
    });
  });
});

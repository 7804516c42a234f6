import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { ISO_MS, expectError } from '../support/expectations.js';

const TIER_ID = /^tier_[A-Za-z0-9_-]{16,}$/;

describe('tiers', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());



  async function createTier(key: string, body: Record<string, unknown>) {
    const response = await t.request('POST', '/api/v1/tiers', { key, body });
    expect(response.status, response.text).toBe(201);
    return response.body as { id: string; name: string; points_threshold: number; multiplier: number; benefits: string[] };
  }

  async function transact(key: string, customerId: string, body: Record<string, unknown>) {
    const response = await t.request('POST', `/api/v1/customers/${customerId}/points/transaction`, { key, body });
    expect(response.status, response.text).toBe(201);
    return response.body;
  }

  async function customer(key: string, customerId: string) {
    const response = await t.request('GET', `/api/v1/customers/${customerId}`, { key });
    expect(response.status, response.text).toBe(200);
    expect(response.body.points_balance).toBe(response.body.lifetime_earned - response.body.lifetime_redeemed);
    return response.body;
  }

  async function summary(key: string, customerId: string) {
    const response = await t.request('GET', `/api/v1/customers/${customerId}/summary`, { key });
    expect(response.status, response.text).toBe(200);
    return response.body;
  }

  async function tierUpgrades(key: string, customerId: string) {
    const response = await t.request('GET', `/api/v1/customers/${customerId}/stream?limit=200`, { key });
    expect(response.status, response.text).toBe(200);
    return (response.body as Array<{ type: string; data: any }>).filter((e) => e.type === 'TierUpgraded').map((e) => e.data);
  }

  async function restrictedKey(key: string, permissions: string[]) {
    const response = await t.request('POST', '/api/v1/keys', { key, body: { type: 'private', permissions } });
    expect(response.status, response.text).toBe(201);
    return response.body.key as string;
  }

  /** A business with Bronze 0 ×1, Silver 100 ×1.5, Gold 500 ×2 (created out of order). */
  async function programmeBusiness() {
    const biz = await t.business();
    const key = biz.private_key;
    const gold = await createTier(key, { name: 'Gold', points_threshold: 500, multiplier: 2, benefits: ['lounge', 'free shipping'] });
    const bronze = await createTier(key, { name: 'Bronze', points_threshold: 0, multiplier: 1 });
    const silver = await createTier(key, { name: 'Silver', points_threshold: 100, multiplier: 1.5, benefits: ['free shipping'] });
    return { biz, key, bronze, silver, gold };
  }

  describe('managing tiers', () => {
    it('creates a tier and answers it with its id, defaults and timestamps', async () => {
      const { private_key: key } = await t.business();
      const response = await t.request('POST', '/api/v1/tiers', {
        key,
        body: { name: 'Gold', points_threshold: 1000, multiplier: 1.25, benefits: ['lounge'], metadata: { colour: 'gold' } },
      });
      expect(response.status, response.text).toBe(201);
      expect(response.body).toEqual({
        id: expect.stringMatching(TIER_ID),
        name: 'Gold',
        points_threshold: 1000,
        multiplier: 1.25,
        benefits: ['lounge'],
        metadata: { colour: 'gold' },
        created_at: expect.stringMatching(ISO_MS),
        updated_at: expect.stringMatching(ISO_MS),
      });

      const bare = await createTier(key, { name: 'Entry', points_threshold: 0, multiplier: 1 });
      expect(bare).toMatchObject({ benefits: [], metadata: {}, multiplier: 1 });

      const got = await t.request('GET', `/api/v1/tiers/${response.body.id}`, { key });
      expect(got.status).toBe(200);
      expect(got.body).toEqual(response.body);
    });

    it('lists tiers by threshold, whatever the creation order, and pages them', async () => {
      const { key } = await programmeBusiness();
      const listed = await t.request('GET', '/api/v1/tiers', { key });
      expect(listed.status).toBe(200);
      expect(listed.body.map((x: { name: string }) => x.name)).toEqual(['Bronze', 'Silver', 'Gold']);

      const first = await t.request('GET', '/api/v1/tiers?limit=2', { key });
      expect(first.body.map((x: { name: string }) => x.name)).toEqual(['Bronze', 'Silver']);
      const next = /<([^>]+)>;\s*rel="next"/.exec(first.headers.get('link') ?? '')?.[1];
      expect(next).toBeDefined();
      const second = await t.request('GET', next!, { key });
      expect(second.body.map((x: { name: string }) => x.name)).toEqual(['Gold']);
      expect(second.headers.get('link')).toBeNull();
    });

    it('patches a tier, answering it as it now stands', async () => {
      const { key, silver } = await programmeBusiness();
      const patched = await t.request('PATCH', `/api/v1/tiers/${silver.id}`, {
        key,
        body: { name: 'Silver+', multiplier: 1.75, benefits: ['free shipping', 'birthday gift'], points_threshold: 150 },
      });
      expect(patched.status, patched.text).toBe(200);
      expect(patched.body).toMatchObject({
        id: silver.id,
        name: 'Silver+',
        points_threshold: 150,
        multiplier: 1.75,
        benefits: ['free shipping', 'birthday gift'],
      });
      const got = await t.request('GET', `/api/v1/tiers/${silver.id}`, { key });
      expect(got.body).toEqual(patched.body);
      // The list order follows the new threshold too.
      const listed = await t.request('GET', '/api/v1/tiers', { key });
      expect(listed.body.map((x: { name: string }) => x.name)).toEqual(['Bronze', 'Silver+', 'Gold']);
    });

    it('refuses a duplicate name (case-insensitively) or threshold with 409 conflict, on create and on patch', async () => {
      const { key, silver } = await programmeBusiness();
      expectError(await t.request('POST', '/api/v1/tiers', { key, body: { name: 'gold', points_threshold: 900, multiplier: 1 } }), 409, 'conflict');
      expectError(await t.request('POST', '/api/v1/tiers', { key, body: { name: 'Platinum', points_threshold: 500, multiplier: 3 } }), 409, 'conflict');
      expectError(await t.request('PATCH', `/api/v1/tiers/${silver.id}`, { key, body: { name: 'GOLD' } }), 409, 'conflict');
      expectError(await t.request('PATCH', `/api/v1/tiers/${silver.id}`, { key, body: { points_threshold: 0 } }), 409, 'conflict');
      // A tier may keep its own name and threshold.
      const same = await t.request('PATCH', `/api/v1/tiers/${silver.id}`, { key, body: { name: 'Silver', points_threshold: 100 } });
      expect(same.status, same.text).toBe(200);
      const listed = await t.request('GET', '/api/v1/tiers', { key });
      expect(listed.body).toHaveLength(3);
    });

    it('creates exactly one of several tiers racing for one name or one threshold', async () => {
      const { private_key: key } = await t.business();
      const sameName = await Promise.all(
        Array.from({ length: 6 }, (_, i) => t.request('POST', '/api/v1/tiers', { key, body: { name: 'Gold', points_threshold: 100 + i, multiplier: 2 } })),
      );
      expect(sameName.filter((r) => r.status === 201)).toHaveLength(1);
      for (const r of sameName.filter((x) => x.status !== 201)) expectError(r, 409, 'conflict');
      const sameThreshold = await Promise.all(
        Array.from({ length: 6 }, (_, i) => t.request('POST', '/api/v1/tiers', { key, body: { name: `Tier ${i}`, points_threshold: 5000, multiplier: 2 } })),
      );
      expect(sameThreshold.filter((r) => r.status === 201)).toHaveLength(1);
      for (const r of sameThreshold.filter((x) => x.status !== 201)) expectError(r, 409, 'conflict');
      const listed = await t.request('GET', '/api/v1/tiers', { key });
      expect(listed.body).toHaveLength(2);
    });

    it('accepts the same name and threshold in another business', async () => {
      await programmeBusiness();
      await programmeBusiness();
    });

    it('accepts multipliers from 1.0 to 10.0 with at most two decimals', async () => {
      const { private_key: key } = await t.business();
      const accepted = [1, 1.01, 1.15, 1.29, 2.5, 9.99, 10];
      for (const [i, multiplier] of accepted.entries()) {
        const tier = await createTier(key, { name: `T${i}`, points_threshold: i * 10, multiplier });
        expect(tier.multiplier).toBe(multiplier);
      }
    });

    it('refuses an invalid multiplier, threshold or field with 400 and details', async () => {
      const { private_key: key } = await t.business();
      const invalid: Array<[Record<string, unknown>, string]> = [
        [{ multiplier: 1.255 }, 'multiplier'],
        [{ multiplier: 0.9 }, 'multiplier'],
        [{ multiplier: 10.01 }, 'multiplier'],
        [{ multiplier: 0 }, 'multiplier'],
        [{ multiplier: '1.5' }, 'multiplier'],
        [{ points_threshold: -1 }, 'points_threshold'],
        [{ points_threshold: 10.5 }, 'points_threshold'],
        [{ name: '' }, 'name'],
        [{ benefits: 'lounge' }, 'benefits'],
        [{ colour: 'gold' }, 'colour'],
      ];
      for (const [override, path] of invalid) {
        const response = await t.request('POST', '/api/v1/tiers', { key, body: { name: 'Gold', points_threshold: 100, multiplier: 1.5, ...override } });
        expectError(response, 400, 'validation_error');
        expect(response.body.details.map((d: { path: string }) => d.path).join(' '), JSON.stringify(override)).toContain(path);
      }
      expectError(await t.request('POST', '/api/v1/tiers', { key, body: { name: 'Gold', multiplier: 1.5 } }), 400, 'validation_error');

      const tier = await createTier(key, { name: 'Gold', points_threshold: 100, multiplier: 1.5 });
      for (const body of [{ multiplier: 1.255 }, { multiplier: 0.9 }, { multiplier: 10.01 }, { points_threshold: -5 }, { id: 'tier_x' }]) {
        expectError(await t.request('PATCH', `/api/v1/tiers/${tier.id}`, { key, body }), 400, 'validation_error');
      }
      const listed = await t.request('GET', '/api/v1/tiers', { key });
      expect(listed.body).toHaveLength(1);
      expect(listed.body[0]).toMatchObject({ multiplier: 1.5, points_threshold: 100 });
    });

    it('answers 404 tier_not_found for an unknown tier and for another business’s tier', async () => {
      const { key } = await programmeBusiness();
      const other = await programmeBusiness();
      expectError(await t.request('GET', '/api/v1/tiers/tier_doesnotexist000000', { key }), 404, 'tier_not_found');
      expectError(await t.request('PATCH', '/api/v1/tiers/tier_doesnotexist000000', { key, body: { multiplier: 2 } }), 404, 'tier_not_found');
      expectError(await t.request('GET', `/api/v1/tiers/${other.gold.id}`, { key }), 404, 'tier_not_found');
      expectError(await t.request('PATCH', `/api/v1/tiers/${other.gold.id}`, { key, body: { multiplier: 3 } }), 404, 'tier_not_found');
      const untouched = await t.request('GET', `/api/v1/tiers/${other.gold.id}`, { key: other.key });
      expect(untouched.body.multiplier).toBe(2);
      const listed = await t.request('GET', '/api/v1/tiers', { key });
      expect(listed.body.map((x: { id: string }) => x.id)).not.toContain(other.gold.id);
    });

    it('needs rewards:write to write and rewards:read to read; a public key reads only', async () => {
      const { biz, key, silver } = await programmeBusiness();
      const reader = await restrictedKey(key, ['rewards:read']);
      const writer = await restrictedKey(key, ['rewards:write']);
      const neither = await restrictedKey(key, ['customers:read', 'customers:write', 'points:read', 'points:write']);

      const body = { name: 'Platinum', points_threshold: 2000, multiplier: 3 };
      const denied = await t.request('POST', '/api/v1/tiers', { key: reader, body });
      expectError(denied, 403, 'insufficient_permissions');
      expect(denied.body.message).toContain('rewards:write');
      expectError(await t.request('PATCH', `/api/v1/tiers/${silver.id}`, { key: reader, body: { multiplier: 2 } }), 403, 'insufficient_permissions');
      expectError(await t.request('POST', '/api/v1/tiers', { key: neither, body }), 403, 'insufficient_permissions');
      expectError(await t.request('POST', '/api/v1/tiers', { key: biz.public_key, body }), 403, 'public_key_not_allowed');

      const readDenied = await t.request('GET', '/api/v1/tiers', { key: writer });
      expectError(readDenied, 403, 'insufficient_permissions');
      expect(readDenied.body.message).toContain('rewards:read');
      expectError(await t.request('GET', `/api/v1/tiers/${silver.id}`, { key: neither }), 403, 'insufficient_permissions');

      expect((await t.request('GET', '/api/v1/tiers', { key: reader })).status).toBe(200);
      expect((await t.request('GET', `/api/v1/tiers/${silver.id}`, { key: biz.public_key })).status).toBe(200);
      expect((await t.request('POST', '/api/v1/tiers', { key: writer, body })).status).toBe(201);
      expect((await t.request('PATCH', `/api/v1/tiers/${silver.id}`, { key: writer, body: { multiplier: 1.6 } })).status).toBe(200);

      const listed = await t.request('GET', '/api/v1/tiers', { key: biz.public_key });
      expect(listed.body.map((x: { name: string }) => x.name)).toEqual(['Bronze', 'Silver', 'Gold', 'Platinum']);
    });
  });

  describe('automatic upgrades', () => {
    it('leaves a new customer without a tier, even when a 0-threshold tier exists, until the first earn', async () => {
      const { key, bronze } = await programmeBusiness();
      const id = await t.newCustomer(key);
      expect((await customer(key, id)).tier).toBeNull();

      await transact(key, id, { type: 'earn', amount: 10 });
      const after = await customer(key, id);
      expect(after.tier).toEqual({
        id: bronze.id,
        name: 'Bronze',
        points_threshold: 0,
        multiplier: 1,
        benefits: [],
        achieved_at: expect.stringMatching(ISO_MS),
      });
      const upgrades = await tierUpgrades(key, id);
      expect(upgrades).toHaveLength(1);
      expect(upgrades[0]).toMatchObject({ previous_tier: null, new_tier: { id: bronze.id, name: 'Bronze' }, lifetime_earned: 10 });
    });

    it('upgrades straight to the highest tier passed, as one upgrade', async () => {
      const { key, bronze, gold } = await programmeBusiness();
      const id = await t.newCustomer(key);
      await transact(key, id, { type: 'earn', amount: 5 });
      expect((await customer(key, id)).tier.id).toBe(bronze.id);

      await transact(key, id, { type: 'earn', amount: 600 }); // passes Silver (100) and Gold (500)
      const after = await customer(key, id);
      expect(after.tier).toEqual({
        id: gold.id,
        name: 'Gold',
        points_threshold: 500,
        multiplier: 2,
        benefits: ['lounge', 'free shipping'],
        achieved_at: expect.stringMatching(ISO_MS),
      });
      const upgrades = await tierUpgrades(key, id);
      expect(upgrades).toHaveLength(2);
      expect(upgrades[1]).toEqual({
        previous_tier: { id: bronze.id, name: 'Bronze', points_threshold: 0, multiplier: 1, benefits: [] },
        new_tier: { id: gold.id, name: 'Gold', points_threshold: 500, multiplier: 2, benefits: ['lounge', 'free shipping'] },
        lifetime_earned: 605,
      });
    });

    it('upgrades on a positive adjust, which raises lifetime_earned', async () => {
      const { key, silver } = await programmeBusiness();
      const id = await t.newCustomer(key);
      await transact(key, id, { type: 'adjust', amount: 150 });
      expect((await customer(key, id)).tier.id).toBe(silver.id);
    });

    it('never demotes: a negative adjust or a deduct keeps the tier, and a deduct leaves lifetime_earned alone', async () => {
      const { key, silver } = await programmeBusiness();
      const id = await t.newCustomer(key);
      await transact(key, id, { type: 'earn', amount: 150 });
      const reached = await customer(key, id);
      expect(reached.tier.id).toBe(silver.id);

      await transact(key, id, { type: 'deduct', amount: 120 });
      let now = await customer(key, id);
      expect(now).toMatchObject({ points_balance: 30, lifetime_earned: 150, lifetime_redeemed: 120 });
      expect(now.tier).toEqual(reached.tier);

      await transact(key, id, { type: 'adjust', amount: -30 });
      now = await customer(key, id);
      expect(now).toMatchObject({ points_balance: 0, lifetime_earned: 120, lifetime_redeemed: 120 });
      expect(now.tier).toEqual(reached.tier);

      // Climbing back over the held tier's threshold is no new upgrade.
      await transact(key, id, { type: 'earn', amount: 20 });
      expect((await customer(key, id)).tier).toEqual(reached.tier);
      const upgrades = await tierUpgrades(key, id);
      expect(upgrades).toHaveLength(1); // straight from none to Silver, and nothing since
      expect(upgrades[0]).toMatchObject({ previous_tier: null, new_tier: { id: silver.id } });
    });

    it('applies the multiplier of the tier held before the earn, not of the tier the earn reaches', async () => {
      const { private_key: key } = await t.business();
      const silver = await createTier(key, { name: 'Silver', points_threshold: 100, multiplier: 1.5 });
      const id = await t.newCustomer(key);

      const first = await transact(key, id, { type: 'earn', amount: 200, apply_multiplier: true });
      expect(first).toMatchObject({ type: 'earn', amount: 200, base_amount: 200, multiplier: 1, balance: 200 });
      expect((await customer(key, id)).tier.id).toBe(silver.id);

      const second = await transact(key, id, { type: 'earn', amount: 101, apply_multiplier: true });
      expect(second).toMatchObject({ type: 'earn', amount: 151, base_amount: 101, multiplier: 1.5, balance: 351 });

      const plain = await transact(key, id, { type: 'earn', amount: 10 });
      expect(plain.amount).toBe(10);
      expect(await customer(key, id)).toMatchObject({ points_balance: 361, lifetime_earned: 361 });
    });

    it('uses the held tier’s multiplier as it is now defined after a patch', async () => {
      const { key, silver } = await programmeBusiness();
      const id = await t.newCustomer(key);
      await transact(key, id, { type: 'earn', amount: 150 });
      const patched = await t.request('PATCH', `/api/v1/tiers/${silver.id}`, { key, body: { multiplier: 1.15, name: 'Argent' } });
      expect(patched.status, patched.text).toBe(200);
      expect((await customer(key, id)).tier).toMatchObject({ id: silver.id, name: 'Argent', multiplier: 1.15 });

      const earn = await transact(key, id, { type: 'earn', amount: 100, apply_multiplier: true });
      expect(earn).toMatchObject({ amount: 115, base_amount: 100, multiplier: 1.15 });
    });

    it('shows the current and next tier in the summary with the points still needed', async () => {
      const { key, bronze, silver, gold } = await programmeBusiness();
      const id = await t.newCustomer(key);

      let s = await summary(key, id);
      expect(s.tier.current).toBeNull();
      expect(s.tier.next).toMatchObject({ id: bronze.id, name: 'Bronze', points_threshold: 0, points_needed: 0 });

      await transact(key, id, { type: 'earn', amount: 40 });
      s = await summary(key, id);
      expect(s.tier.current).toMatchObject({ id: bronze.id, name: 'Bronze' });
      expect(s.tier.next).toMatchObject({ id: silver.id, name: 'Silver', points_threshold: 100, points_needed: 60 });

      await transact(key, id, { type: 'deduct', amount: 40 }); // spending does not move the goal
      s = await summary(key, id);
      expect(s.tier.next).toMatchObject({ name: 'Silver', points_needed: 60 });

      await transact(key, id, { type: 'earn', amount: 100 });
      s = await summary(key, id);
      expect(s.tier.current).toEqual((await customer(key, id)).tier);
      expect(s.tier.current).toMatchObject({ id: silver.id, name: 'Silver', multiplier: 1.5 });
      expect(s.tier.next).toMatchObject({ id: gold.id, name: 'Gold', points_threshold: 500, points_needed: 360 });
      expect(s.points).toEqual({ balance: 100, lifetime_earned: 140, lifetime_redeemed: 40, pending: 0, lifetime_expired: 0, next_expiring: null });

      await transact(key, id, { type: 'earn', amount: 1000 });
      s = await summary(key, id);
      expect(s.tier.current).toMatchObject({ id: gold.id, name: 'Gold' });
      expect(s.tier.next).toBeNull();
    });

    it('points_needed is never negative for a next tier already passed (a tier added below the balance)', async () => {
      const { private_key: key } = await t.business();
      const id = await t.newCustomer(key);
      await transact(key, id, { type: 'earn', amount: 300 });
      // The tier appears after the customer's earns: no evaluation has happened since.
      const silver = await createTier(key, { name: 'Silver', points_threshold: 100, multiplier: 1.5 });
      const s = await summary(key, id);
      expect(s.tier.current).toBeNull();
      expect(s.tier.next).toMatchObject({ id: silver.id, points_needed: 0 });
      // The next rise of lifetime_earned evaluates the tier.
      await transact(key, id, { type: 'earn', amount: 1 });
      expect((await customer(key, id)).tier.id).toBe(silver.id);
    });

    it('filters customers by tier id', async () => {
      const { key, bronze, silver, gold } = await programmeBusiness();
      const other = await programmeBusiness();
      const a = await t.newCustomer(key);
      const b = await t.newCustomer(key);
      const c = await t.newCustomer(key);
      const none = await t.newCustomer(key);
      await transact(key, a, { type: 'earn', amount: 150 });
      await transact(key, b, { type: 'earn', amount: 700 });
      await transact(key, c, { type: 'earn', amount: 120 });
      const inOther = await t.newCustomer(other.key);
      await transact(other.key, inOther, { type: 'earn', amount: 150 });

      const ids = async (tierId: string) => {
        const response = await t.request('GET', `/api/v1/customers?tier=${tierId}`, { key });
        expect(response.status, response.text).toBe(200);
        return response.body.map((x: { id: string }) => x.id);
      };
      expect(await ids(silver.id)).toEqual([a, c]);
      expect(await ids(gold.id)).toEqual([b]);
      expect(await ids(bronze.id)).toEqual([]);
      expect(await ids(other.silver.id)).toEqual([]);
      const all = await t.request('GET', '/api/v1/customers', { key });
      expect(all.body.map((x: { id: string }) => x.id)).toEqual([a, b, c, none]);
    });
  });
});

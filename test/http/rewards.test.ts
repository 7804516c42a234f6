import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { ISO_MS, expectError } from '../support/expectations.js';

const REWARD_ID = /^rew_[A-Za-z0-9_-]{16,}$/;

describe('rewards', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());


  async function createReward(key: string, body: Record<string, unknown>) {
    const response = await t.request('POST', '/api/v1/rewards', { key, body });
    expect(response.status, response.text).toBe(201);
    return response.body;
  }

  const ids = (list: Array<{ id: string }>) => list.map((r) => r.id);

  describe('creating rewards', () => {
    it('creates a reward: active, redeemed_count 0, unlimited stock unless given', async () => {
      const { private_key: key } = await t.business();
      const response = await t.request('POST', '/api/v1/rewards', { key, body: { title: 'Free coffee', points_cost: 150, reward_type: 'digital' } });
      expect(response.status, response.text).toBe(201);
      expect(response.body).toEqual({
        id: expect.stringMatching(REWARD_ID),
        title: 'Free coffee',
        points_cost: 150,
        reward_type: 'digital',
        description: null,
        stock_quantity: null,
        active: true,
        redeemed_count: 0,
        metadata: {},
        created_at: expect.stringMatching(ISO_MS),
        updated_at: expect.stringMatching(ISO_MS),
      });

      const full = await createReward(key, {
        title: 'Tote bag',
        points_cost: 500,
        reward_type: 'physical',
        description: 'Organic cotton',
        stock_quantity: 25,
        metadata: { sku: 'TOTE-1' },
      });
      expect(full).toMatchObject({ description: 'Organic cotton', stock_quantity: 25, metadata: { sku: 'TOTE-1' }, active: true, redeemed_count: 0 });
      const explicitNull = await createReward(key, { title: 'Badge', points_cost: 0, reward_type: 'achievement', stock_quantity: null });
      expect(explicitNull).toMatchObject({ points_cost: 0, stock_quantity: null });
      const noneLeft = await createReward(key, { title: 'Sold out', points_cost: 1, reward_type: 'experience', stock_quantity: 0 });
      expect(noneLeft.stock_quantity).toBe(0);

      const got = await t.request('GET', `/api/v1/rewards/${full.id}`, { key });
      expect(got.status).toBe(200);
      expect(got.body).toEqual(full);
    });

    it('accepts every reward type of the contract and no other', async () => {
      const { private_key: key } = await t.business();
      for (const reward_type of ['digital', 'physical', 'discount', 'experience', 'achievement']) {
        expect((await createReward(key, { title: reward_type, points_cost: 10, reward_type })).reward_type).toBe(reward_type);
      }
      for (const reward_type of ['voucher', 'Digital', '', null]) {
        const response = await t.request('POST', '/api/v1/rewards', { key, body: { title: 'x', points_cost: 10, reward_type } });
        expectError(response, 400, 'validation_error');
        expect(response.body.details.map((d: { path: string }) => d.path)).toContain('reward_type');
      }
    });

    it('refuses invalid fields with 400 and details naming them', async () => {
      const { private_key: key } = await t.business();
      const cases: Array<[Record<string, unknown>, string]> = [
        [{ points_cost: -1 }, 'points_cost'],
        [{ points_cost: 1.5 }, 'points_cost'],
        [{ points_cost: '100' }, 'points_cost'],
        [{ stock_quantity: -1 }, 'stock_quantity'],
        [{ stock_quantity: 2.5 }, 'stock_quantity'],
        [{ title: '' }, 'title'],
        [{ title: undefined }, 'title'],
        [{ points_cost: undefined }, 'points_cost'],
        [{ active: false }, 'active'],
        [{ price: 10 }, 'price'],
        [{ metadata: 'x' }, 'metadata'],
      ];
      for (const [override, path] of cases) {
        const response = await t.request('POST', '/api/v1/rewards', { key, body: { title: 'Mug', points_cost: 100, reward_type: 'physical', ...override } });
        expectError(response, 400, 'validation_error');
        expect(response.body.details.map((d: { path: string }) => d.path), JSON.stringify(override)).toContain(path);
      }
      expect((await t.request('GET', '/api/v1/rewards', { key })).body).toEqual([]);
    });
  });

  describe('reading rewards', () => {
    it('lists rewards oldest first, with pages and the active and reward_type filters', async () => {
      const { private_key: key } = await t.business();
      const { private_key: otherKey } = await t.business();
      await createReward(otherKey, { title: 'Theirs', points_cost: 1, reward_type: 'digital' });
      const made = [
        await createReward(key, { title: 'A', points_cost: 10, reward_type: 'digital' }),
        await createReward(key, { title: 'B', points_cost: 20, reward_type: 'physical' }),
        await createReward(key, { title: 'C', points_cost: 30, reward_type: 'digital' }),
      ];
      const off = await t.request('PATCH', `/api/v1/rewards/${made[1]!.id}`, { key, body: { active: false } });
      expect(off.status).toBe(200);

      const listed = await t.request('GET', '/api/v1/rewards', { key });
      expect(listed.status).toBe(200);
      expect(ids(listed.body)).toEqual(ids(made));

      const first = await t.request('GET', '/api/v1/rewards?limit=2', { key });
      expect(ids(first.body)).toEqual(ids(made.slice(0, 2)));
      const next = /<([^>]+)>;\s*rel="next"/.exec(first.headers.get('link') ?? '')?.[1];
      const second = await t.request('GET', next!, { key });
      expect(ids(second.body)).toEqual([made[2]!.id]);
      expect(second.headers.get('link')).toBeNull();

      expect(ids((await t.request('GET', '/api/v1/rewards?active=true', { key })).body)).toEqual([made[0]!.id, made[2]!.id]);
      expect(ids((await t.request('GET', '/api/v1/rewards?active=false', { key })).body)).toEqual([made[1]!.id]);
      expect(ids((await t.request('GET', '/api/v1/rewards?reward_type=digital', { key })).body)).toEqual([made[0]!.id, made[2]!.id]);
    });

    it('answers 404 reward_not_found for an unknown reward and for another business’s', async () => {
      const { private_key: key } = await t.business();
      const { private_key: otherKey } = await t.business();
      const theirs = await createReward(otherKey, { title: 'Theirs', points_cost: 5, reward_type: 'digital' });
      expectError(await t.request('GET', '/api/v1/rewards/rew_doesnotexist00000000', { key }), 404, 'reward_not_found');
      expectError(await t.request('PATCH', '/api/v1/rewards/rew_doesnotexist00000000', { key, body: { title: 'x' } }), 404, 'reward_not_found');
      expectError(await t.request('GET', `/api/v1/rewards/${theirs.id}`, { key }), 404, 'reward_not_found');
      expectError(await t.request('PATCH', `/api/v1/rewards/${theirs.id}`, { key, body: { active: false, title: 'Mine' } }), 404, 'reward_not_found');
      expect((await t.request('GET', `/api/v1/rewards/${theirs.id}`, { key: otherKey })).body).toEqual(theirs);
    });
  });

  describe('updating rewards', () => {
    it('patches any field, active and stock_quantity included, answering the reward as it now stands', async () => {
      const { private_key: key } = await t.business();
      const reward = await createReward(key, { title: 'Mug', points_cost: 100, reward_type: 'physical', description: 'Blue', stock_quantity: 10 });

      const patched = await t.request('PATCH', `/api/v1/rewards/${reward.id}`, {
        key,
        body: { title: 'Big mug', points_cost: 120, reward_type: 'discount', description: null, stock_quantity: 3, active: false, metadata: { v: 2 } },
      });
      expect(patched.status, patched.text).toBe(200);
      expect(patched.body).toEqual({
        ...reward,
        title: 'Big mug',
        points_cost: 120,
        reward_type: 'discount',
        description: null,
        stock_quantity: 3,
        active: false,
        metadata: { v: 2 },
        updated_at: expect.stringMatching(ISO_MS),
      });
      expect((await t.request('GET', `/api/v1/rewards/${reward.id}`, { key })).body).toEqual(patched.body);

      const unlimited = await t.request('PATCH', `/api/v1/rewards/${reward.id}`, { key, body: { stock_quantity: null, active: true } });
      expect(unlimited.body).toMatchObject({ stock_quantity: null, active: true, title: 'Big mug' });

      const unchanged = await t.request('PATCH', `/api/v1/rewards/${reward.id}`, { key, body: {} });
      expect(unchanged.status).toBe(200);
      expect(unchanged.body).toEqual(unlimited.body);
    });

    it('refuses invalid patches, leaving the reward unchanged', async () => {
      const { private_key: key } = await t.business();
      const reward = await createReward(key, { title: 'Mug', points_cost: 100, reward_type: 'physical', stock_quantity: 10 });
      const cases: Array<[Record<string, unknown>, string]> = [
        [{ points_cost: -5 }, 'points_cost'],
        [{ stock_quantity: -1 }, 'stock_quantity'],
        [{ reward_type: 'voucher' }, 'reward_type'],
        [{ active: 'no' }, 'active'],
        [{ redeemed_count: 0 }, 'redeemed_count'],
        [{ id: 'rew_other' }, 'id'],
      ];
      for (const [body, path] of cases) {
        const response = await t.request('PATCH', `/api/v1/rewards/${reward.id}`, { key, body });
        expectError(response, 400, 'validation_error');
        expect(response.body.details.map((d: { path: string }) => d.path), JSON.stringify(body)).toContain(path);
      }
      expect((await t.request('GET', `/api/v1/rewards/${reward.id}`, { key })).body).toEqual(reward);
    });
  });

  describe('permissions', () => {
    it('lets a public key read rewards but never write them', async () => {
      const biz = await t.business();
      const reward = await createReward(biz.private_key, { title: 'Mug', points_cost: 100, reward_type: 'physical' });
      const list = await t.request('GET', '/api/v1/rewards', { key: biz.public_key });
      expect(list.status).toBe(200);
      expect(ids(list.body)).toEqual([reward.id]);
      expect((await t.request('GET', `/api/v1/rewards/${reward.id}`, { key: biz.public_key })).body).toEqual(reward);

      expectError(await t.request('POST', '/api/v1/rewards', { key: biz.public_key, body: { title: 'X', points_cost: 1, reward_type: 'digital' } }), 403, 'public_key_not_allowed');
      expectError(await t.request('PATCH', `/api/v1/rewards/${reward.id}`, { key: biz.public_key, body: { active: false } }), 403, 'public_key_not_allowed');
      expect((await t.request('GET', `/api/v1/rewards/${reward.id}`, { key: biz.private_key })).body.active).toBe(true);
    });

    it('needs rewards:write to create or patch and rewards:read to read', async () => {
      const biz = await t.business();
      const key = biz.private_key;
      const reward = await createReward(key, { title: 'Mug', points_cost: 100, reward_type: 'physical' });
      const keyWith = async (permissions: string[]) =>
        (await t.request('POST', '/api/v1/keys', { key, body: { type: 'private', permissions } })).body.key as string;
      const reader = await keyWith(['rewards:read']);
      const writer = await keyWith(['rewards:write']);
      const body = { title: 'Cap', points_cost: 50, reward_type: 'physical' };

      const denied = await t.request('POST', '/api/v1/rewards', { key: reader, body });
      expectError(denied, 403, 'insufficient_permissions');
      expect(denied.body.message).toContain('rewards:write');
      expectError(await t.request('PATCH', `/api/v1/rewards/${reward.id}`, { key: reader, body: { title: 'X' } }), 403, 'insufficient_permissions');
      const readDenied = await t.request('GET', '/api/v1/rewards', { key: writer });
      expectError(readDenied, 403, 'insufficient_permissions');
      expect(readDenied.body.message).toContain('rewards:read');
      expectError(await t.request('GET', `/api/v1/rewards/${reward.id}`, { key: writer }), 403, 'insufficient_permissions');

      const cap = await t.request('POST', '/api/v1/rewards', { key: writer, body });
      expect(cap.status).toBe(201);
      expect((await t.request('PATCH', `/api/v1/rewards/${reward.id}`, { key: writer, body: { title: 'Mug 2' } })).status).toBe(200);
      const listed = await t.request('GET', '/api/v1/rewards', { key: reader });
      expect(listed.body.map((r: { title: string }) => r.title)).toEqual(['Mug 2', 'Cap']);
    });
  });
});

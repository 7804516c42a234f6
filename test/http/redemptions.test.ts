import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { ISO_MS, expectError } from '../support/expectations.js';

const RED_ID = /^red_[A-Za-z0-9_-]{16,}$/;

describe('redemptions', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  let emails = 0;


  /** A customer holding `balance` points (earned). */
  async function customerWith(key: string, balance: number) {
    const created = await t.request('POST', '/api/v1/customers', { key, body: { email: `red-${++emails}@example.com` } });
    expect(created.status, created.text).toBe(201);
    const id = created.body.id as string;
    if (balance > 0) {
      const earn = await t.request('POST', `/api/v1/customers/${id}/points/transaction`, { key, body: { type: 'earn', amount: balance } });
      expect(earn.status, earn.text).toBe(201);
    }
    return id;
  }

  async function createReward(key: string, body: Record<string, unknown>) {
    const response = await t.request('POST', '/api/v1/rewards', { key, body });
    expect(response.status, response.text).toBe(201);
    return response.body as { id: string; points_cost: number; stock_quantity: number | null };
  }

  const redeem = (key: string, customerId: string, body: Record<string, unknown>) =>
    t.request('POST', `/api/v1/customers/${customerId}/redemptions`, { key, body });
  const cancel = (key: string, customerId: string, redemptionId: string) =>
    t.request('POST', `/api/v1/customers/${customerId}/redemptions/${redemptionId}/cancel`, { key });

  async function reward(key: string, rewardId: string) {
    const response = await t.request('GET', `/api/v1/rewards/${rewardId}`, { key });
    expect(response.status, response.text).toBe(200);
    return response.body as { stock_quantity: number | null; redeemed_count: number; active: boolean };
  }

  /** Balance and lifetime totals, as the customer and the summary both show them; checks the invariant. */
  async function points(key: string, customerId: string) {
    const [customer, summary] = await Promise.all([
      t.request('GET', `/api/v1/customers/${customerId}`, { key }),
      t.request('GET', `/api/v1/customers/${customerId}/summary`, { key }),
    ]);
    const p = { balance: customer.body.points_balance, lifetime_earned: customer.body.lifetime_earned, lifetime_redeemed: customer.body.lifetime_redeemed };
    expect(summary.body.points).toEqual({ ...p, pending: 0, lifetime_expired: 0, next_expiring: null });
    expect(p.balance).toBe(p.lifetime_earned - p.lifetime_redeemed);
    expect(p.balance).toBeGreaterThanOrEqual(0);
    return p;
  }

  async function ledger(key: string, customerId: string) {
    const response = await t.request('GET', `/api/v1/customers/${customerId}/transactions?limit=200`, { key });
    expect(response.status, response.text).toBe(200);
    return response.body as Array<{ id: string; type: string; amount: number; balance: number; description: string | null }>;
  }

  async function redemptions(key: string, customerId: string) {
    const response = await t.request('GET', `/api/v1/customers/${customerId}/redemptions?limit=200`, { key });
    expect(response.status, response.text).toBe(200);
    return response.body as Array<{ id: string; status: string; reward_id: string }>;
  }

  describe('redeeming', () => {
    it('answers 201 with the redemption and moves balance, lifetime_redeemed, stock and redeemed_count', async () => {
      const { private_key: key } = await t.business();
      const customerId = await customerWith(key, 1000);
      const mug = await createReward(key, { title: 'Mug', points_cost: 300, reward_type: 'physical', stock_quantity: 10 });

      const response = await redeem(key, customerId, { reward_id: mug.id, reference: 'order-1', metadata: { store: 'north' } });
      expect(response.status, response.text).toBe(201);
      expect(response.body).toEqual({
        id: expect.stringMatching(RED_ID),
        customer_id: customerId,
        reward_id: mug.id,
        points_cost: 300,
        balance: 700,
        status: 'completed',
        reference: 'order-1',
        metadata: { store: 'north' },
        created_at: expect.stringMatching(ISO_MS),
        cancelled_at: null,
      });
      expect(await points(key, customerId)).toEqual({ balance: 700, lifetime_earned: 1000, lifetime_redeemed: 300 });
      expect(await reward(key, mug.id)).toMatchObject({ stock_quantity: 9, redeemed_count: 1 });

      // Ordinary rewards may be redeemed again.
      const again = await redeem(key, customerId, { reward_id: mug.id });
      expect(again.status, again.text).toBe(201);
      expect(again.body).toMatchObject({ balance: 400, reference: null, metadata: {} });
      expect(await points(key, customerId)).toEqual({ balance: 400, lifetime_earned: 1000, lifetime_redeemed: 600 });
      expect(await reward(key, mug.id)).toMatchObject({ stock_quantity: 8, redeemed_count: 2 });
    });

    it('keeps an unlimited reward unlimited', async () => {
      const { private_key: key } = await t.business();
      const customerId = await customerWith(key, 100);
      const ebook = await createReward(key, { title: 'E-book', points_cost: 40, reward_type: 'digital' });
      for (let i = 0; i < 2; i++) expect((await redeem(key, customerId, { reward_id: ebook.id })).status).toBe(201);
      expect(await reward(key, ebook.id)).toMatchObject({ stock_quantity: null, redeemed_count: 2 });
      expect((await points(key, customerId)).balance).toBe(20);
    });

    it('refuses with 422 insufficient_points when the balance is short, changing nothing', async () => {
      const { private_key: key } = await t.business();
      const customerId = await customerWith(key, 299);
      const mug = await createReward(key, { title: 'Mug', points_cost: 300, reward_type: 'physical', stock_quantity: 1 });
      const refused = await redeem(key, customerId, { reward_id: mug.id, reference: 'try-1' });
      expectError(refused, 422, 'insufficient_points');
      expect(await points(key, customerId)).toEqual({ balance: 299, lifetime_earned: 299, lifetime_redeemed: 0 });
      expect(await reward(key, mug.id)).toMatchObject({ stock_quantity: 1, redeemed_count: 0 });
      expect(await redemptions(key, customerId)).toEqual([]);

      // Exactly the cost is enough, and the refused attempt did not take the reference.
      await t.request('POST', `/api/v1/customers/${customerId}/points/transaction`, { key, body: { type: 'earn', amount: 1 } });
      const ok = await redeem(key, customerId, { reward_id: mug.id, reference: 'try-1' });
      expect(ok.status, ok.text).toBe(201);
      expect(ok.body.balance).toBe(0);
    });

    it('refuses with 422 reward_inactive for a deactivated reward, and redeems again once reactivated', async () => {
      const { private_key: key } = await t.business();
      const customerId = await customerWith(key, 500);
      const mug = await createReward(key, { title: 'Mug', points_cost: 100, reward_type: 'physical', stock_quantity: 3 });
      expect((await t.request('PATCH', `/api/v1/rewards/${mug.id}`, { key, body: { active: false } })).status).toBe(200);
      expectError(await redeem(key, customerId, { reward_id: mug.id }), 422, 'reward_inactive');
      expect((await points(key, customerId)).balance).toBe(500);
      expect(await reward(key, mug.id)).toMatchObject({ stock_quantity: 3, redeemed_count: 0 });

      expect((await t.request('PATCH', `/api/v1/rewards/${mug.id}`, { key, body: { active: true } })).status).toBe(200);
      expect((await redeem(key, customerId, { reward_id: mug.id })).status).toBe(201);
    });

    it('refuses with 409 out_of_stock once the stock is 0, and redeems again after a restock', async () => {
      const { private_key: key } = await t.business();
      const customerId = await customerWith(key, 500);
      const mug = await createReward(key, { title: 'Mug', points_cost: 100, reward_type: 'physical', stock_quantity: 1 });
      expect((await redeem(key, customerId, { reward_id: mug.id })).status).toBe(201);
      expect(await reward(key, mug.id)).toMatchObject({ stock_quantity: 0, redeemed_count: 1 });

      expectError(await redeem(key, customerId, { reward_id: mug.id }), 409, 'out_of_stock');
      expect((await points(key, customerId)).balance).toBe(400);

      const empty = await createReward(key, { title: 'Empty', points_cost: 1, reward_type: 'physical', stock_quantity: 0 });
      expectError(await redeem(key, customerId, { reward_id: empty.id }), 409, 'out_of_stock');

      expect((await t.request('PATCH', `/api/v1/rewards/${mug.id}`, { key, body: { stock_quantity: 2 } })).status).toBe(200);
      const restocked = await redeem(key, customerId, { reward_id: mug.id });
      expect(restocked.status, restocked.text).toBe(201);
      expect(await reward(key, mug.id)).toMatchObject({ stock_quantity: 1, redeemed_count: 2 });
    });

    it('answers 404 reward_not_found for an unknown reward or another business’s, 404 customer_not_found for an unknown customer', async () => {
      const { private_key: key } = await t.business();
      const { private_key: otherKey } = await t.business();
      const customerId = await customerWith(key, 500);
      const theirs = await createReward(otherKey, { title: 'Theirs', points_cost: 10, reward_type: 'digital', stock_quantity: 5 });
      const mine = await createReward(key, { title: 'Mine', points_cost: 10, reward_type: 'digital' });
      const theirCustomer = await customerWith(otherKey, 500);

      expectError(await redeem(key, customerId, { reward_id: 'rew_doesnotexist00000000' }), 404, 'reward_not_found');
      expectError(await redeem(key, customerId, { reward_id: theirs.id }), 404, 'reward_not_found');
      expectError(await redeem(key, 'cust_doesnotexist0000000', { reward_id: mine.id }), 404, 'customer_not_found');
      expectError(await redeem(key, theirCustomer, { reward_id: mine.id }), 404, 'customer_not_found');
      expectError(await t.request('GET', `/api/v1/customers/${theirCustomer}/redemptions`, { key }), 404, 'customer_not_found');

      expect((await points(key, customerId)).balance).toBe(500);
      expect(await reward(otherKey, theirs.id)).toMatchObject({ stock_quantity: 5, redeemed_count: 0 });
    });

    it('refuses malformed requests with 400 validation_error', async () => {
      const { private_key: key } = await t.business();
      const customerId = await customerWith(key, 100);
      const mug = await createReward(key, { title: 'Mug', points_cost: 10, reward_type: 'physical' });
      for (const [body, path] of [
        [{}, 'reward_id'],
        [{ reward_id: 42 }, 'reward_id'],
        [{ reward_id: mug.id, reference: '' }, 'reference'],
        [{ reward_id: mug.id, quantity: 2 }, 'quantity'],
        [{ reward_id: mug.id, metadata: [1] }, 'metadata'],
      ] as Array<[Record<string, unknown>, string]>) {
        const response = await redeem(key, customerId, body);
        expectError(response, 400, 'validation_error');
        expect(response.body.details.map((d: { path: string }) => d.path), JSON.stringify(body)).toContain(path);
      }
      expect((await points(key, customerId)).balance).toBe(100);
    });

    it('refuses a reused reference with 409 duplicate_transaction carrying the original redemption', async () => {
      const { private_key: key } = await t.business();
      const customerId = await customerWith(key, 500);
      const mug = await createReward(key, { title: 'Mug', points_cost: 100, reward_type: 'physical', stock_quantity: 5 });
      const first = await redeem(key, customerId, { reward_id: mug.id, reference: 'pos-123' });
      expect(first.status).toBe(201);
      const again = await redeem(key, customerId, { reward_id: mug.id, reference: 'pos-123' });
      expectError(again, 409, 'duplicate_transaction');
      expect(again.body.redemption).toEqual(first.body);
      expect((await points(key, customerId)).balance).toBe(400);
      expect(await reward(key, mug.id)).toMatchObject({ stock_quantity: 4, redeemed_count: 1 });
    });

    it('needs points:write to redeem or cancel and points:read to list; a public key lists only', async () => {
      const biz = await t.business();
      const key = biz.private_key;
      const customerId = await customerWith(key, 500);
      const mug = await createReward(key, { title: 'Mug', points_cost: 100, reward_type: 'physical' });
      const keyWith = async (permissions: string[]) =>
        (await t.request('POST', '/api/v1/keys', { key, body: { type: 'private', permissions } })).body.key as string;
      const reader = await keyWith(['points:read', 'rewards:read']);
      const writer = await keyWith(['points:write']);

      const denied = await redeem(reader, customerId, { reward_id: mug.id });
      expectError(denied, 403, 'insufficient_permissions');
      expect(denied.body.message).toContain('points:write');
      expectError(await redeem(biz.public_key, customerId, { reward_id: mug.id }), 403, 'public_key_not_allowed');

      const made = await redeem(writer, customerId, { reward_id: mug.id });
      expect(made.status, made.text).toBe(201);
      expectError(await cancel(reader, customerId, made.body.id), 403, 'insufficient_permissions');
      expectError(await cancel(biz.public_key, customerId, made.body.id), 403, 'public_key_not_allowed');
      expectError(await t.request('GET', `/api/v1/customers/${customerId}/redemptions`, { key: writer }), 403, 'insufficient_permissions');

      expect((await t.request('GET', `/api/v1/customers/${customerId}/redemptions`, { key: reader })).body).toEqual([made.body]);
      expect((await t.request('GET', `/api/v1/customers/${customerId}/redemptions`, { key: biz.public_key })).body).toEqual([made.body]);
      expect((await cancel(writer, customerId, made.body.id)).status).toBe(200);
    });
  });

  describe('achievements', () => {
    it('grants an achievement at most once per customer (409 achievement_already_granted), at no cost and with no ledger line', async () => {
      const { private_key: key } = await t.business();
      const ann = await customerWith(key, 0);
      const bob = await customerWith(key, 0);
      const badge = await createReward(key, { title: 'First order', points_cost: 0, reward_type: 'achievement' });

      const granted = await redeem(key, ann, { reward_id: badge.id });
      expect(granted.status, granted.text).toBe(201);
      expect(granted.body).toMatchObject({ points_cost: 0, balance: 0, status: 'completed' });
      expectError(await redeem(key, ann, { reward_id: badge.id }), 409, 'achievement_already_granted');
      expect((await redeem(key, bob, { reward_id: badge.id })).status).toBe(201);

      expect(await redemptions(key, ann)).toHaveLength(1);
      expect(await ledger(key, ann)).toEqual([]);
      expect(await points(key, ann)).toEqual({ balance: 0, lifetime_earned: 0, lifetime_redeemed: 0 });
      expect(await reward(key, badge.id)).toMatchObject({ redeemed_count: 2 });
    });

    it('can be granted again after its grant was cancelled (only a standing grant blocks another)', async () => {
      const { private_key: key } = await t.business();
      const ann = await customerWith(key, 0);
      const badge = await createReward(key, { title: 'Reviewer', points_cost: 0, reward_type: 'achievement' });
      const granted = await redeem(key, ann, { reward_id: badge.id });
      expect(granted.status).toBe(201);
      expect((await cancel(key, ann, granted.body.id)).status).toBe(200);
      expect(await reward(key, badge.id)).toMatchObject({ redeemed_count: 0 });

      const regranted = await redeem(key, ann, { reward_id: badge.id });
      expect(regranted.status, regranted.text).toBe(201);
      expectError(await redeem(key, ann, { reward_id: badge.id }), 409, 'achievement_already_granted');
      expect((await redemptions(key, ann)).map((r) => r.status)).toEqual(['cancelled', 'completed']);
    });

    it('applies the once-only rule to achievements that cost points too', async () => {
      const { private_key: key } = await t.business();
      const ann = await customerWith(key, 100);
      const badge = await createReward(key, { title: 'Gold badge', points_cost: 30, reward_type: 'achievement' });
      expect((await redeem(key, ann, { reward_id: badge.id })).status).toBe(201);
      expectError(await redeem(key, ann, { reward_id: badge.id }), 409, 'achievement_already_granted');
      expect((await points(key, ann)).balance).toBe(70);
    });

    it('grants exactly once when one customer claims it in parallel', async () => {
      const { private_key: key } = await t.business();
      const ann = await customerWith(key, 0);
      const badge = await createReward(key, { title: 'Early bird', points_cost: 0, reward_type: 'achievement' });
      const responses = await Promise.all(Array.from({ length: 8 }, () => redeem(key, ann, { reward_id: badge.id })));
      expect(responses.filter((r) => r.status === 201)).toHaveLength(1);
      const refused = responses.filter((r) => r.status !== 201);
      expect(refused).toHaveLength(7);
      for (const r of refused) expectError(r, 409, 'achievement_already_granted');
      expect(await redemptions(key, ann)).toHaveLength(1);
      expect(await reward(key, badge.id)).toMatchObject({ redeemed_count: 1 });
    });
  });

  describe('cancelling', () => {
    it('returns the points, the stock and the count, and marks the redemption cancelled', async () => {
      const { private_key: key } = await t.business();
      const customerId = await customerWith(key, 1000);
      const mug = await createReward(key, { title: 'Mug', points_cost: 300, reward_type: 'physical', stock_quantity: 2 });
      const made = await redeem(key, customerId, { reward_id: mug.id });
      expect(made.status).toBe(201);
      expect(await reward(key, mug.id)).toMatchObject({ stock_quantity: 1, redeemed_count: 1 });

      const cancelled = await cancel(key, customerId, made.body.id);
      expect(cancelled.status, cancelled.text).toBe(200);
      // The answer's balance is the one right after the cancellation (CONTRACT §6).
      expect(cancelled.body).toEqual({ ...made.body, balance: 1000, status: 'cancelled', cancelled_at: expect.stringMatching(ISO_MS) });
      expect(await points(key, customerId)).toEqual({ balance: 1000, lifetime_earned: 1000, lifetime_redeemed: 0 });
      expect(await reward(key, mug.id)).toMatchObject({ stock_quantity: 2, redeemed_count: 0 });
      // Listed, a redemption keeps the balance right after the redemption itself.
      expect(await redemptions(key, customerId)).toEqual([{ ...cancelled.body, balance: made.body.balance }]);
    });

    it('answers the balance right after the cancellation, with later changes counted in', async () => {
      const { private_key: key } = await t.business();
      const customerId = await customerWith(key, 1000);
      const mug = await createReward(key, { title: 'Mug', points_cost: 300, reward_type: 'physical' });
      const first = await redeem(key, customerId, { reward_id: mug.id });
      const second = await redeem(key, customerId, { reward_id: mug.id });
      expect([first.body.balance, second.body.balance]).toEqual([700, 400]);
      const earned = await t.request('POST', `/api/v1/customers/${customerId}/points/transaction`, { key, body: { type: 'earn', amount: 50 } });
      expect(earned.body.balance).toBe(450);

      const cancelled = await cancel(key, customerId, first.body.id);
      expect(cancelled.status, cancelled.text).toBe(200);
      expect(cancelled.body).toMatchObject({ id: first.body.id, status: 'cancelled', points_cost: 300, balance: 750 });
      expect((await points(key, customerId)).balance).toBe(750);
      expect((await ledger(key, customerId)).at(-1)).toMatchObject({ type: 'redemption_cancelled', amount: 300, balance: 750 });
    });

    it('gives back the cost paid, even when the reward’s price changed since', async () => {
      const { private_key: key } = await t.business();
      const customerId = await customerWith(key, 1000);
      const mug = await createReward(key, { title: 'Mug', points_cost: 300, reward_type: 'physical' });
      const made = await redeem(key, customerId, { reward_id: mug.id });
      expect(made.status).toBe(201);
      expect((await t.request('PATCH', `/api/v1/rewards/${mug.id}`, { key, body: { points_cost: 500 } })).status).toBe(200);
      const cancelled = await cancel(key, customerId, made.body.id);
      expect(cancelled.body).toMatchObject({ status: 'cancelled', points_cost: 300 });
      expect(await points(key, customerId)).toEqual({ balance: 1000, lifetime_earned: 1000, lifetime_redeemed: 0 });
      const lines = await ledger(key, customerId);
      expect(lines.at(-1)).toMatchObject({ type: 'redemption_cancelled', amount: 300, balance: 1000 });
    });

    it('gives the stock back even when the reward was deactivated meanwhile', async () => {
      const { private_key: key } = await t.business();
      const customerId = await customerWith(key, 100);
      const mug = await createReward(key, { title: 'Mug', points_cost: 100, reward_type: 'physical', stock_quantity: 1 });
      const made = await redeem(key, customerId, { reward_id: mug.id });
      await t.request('PATCH', `/api/v1/rewards/${mug.id}`, { key, body: { active: false } });
      expect((await cancel(key, customerId, made.body.id)).status).toBe(200);
      expect(await reward(key, mug.id)).toMatchObject({ stock_quantity: 1, redeemed_count: 0, active: false });
      expect((await points(key, customerId)).balance).toBe(100);
    });

    it('refuses a second cancel with 409 redemption_already_cancelled, returning nothing twice', async () => {
      const { private_key: key } = await t.business();
      const customerId = await customerWith(key, 500);
      const mug = await createReward(key, { title: 'Mug', points_cost: 200, reward_type: 'physical', stock_quantity: 3 });
      const made = await redeem(key, customerId, { reward_id: mug.id });
      expect((await cancel(key, customerId, made.body.id)).status).toBe(200);
      expectError(await cancel(key, customerId, made.body.id), 409, 'redemption_already_cancelled');
      expect(await points(key, customerId)).toEqual({ balance: 500, lifetime_earned: 500, lifetime_redeemed: 0 });
      expect(await reward(key, mug.id)).toMatchObject({ stock_quantity: 3, redeemed_count: 0 });
    });

    it('cancels exactly once under parallel cancels', async () => {
      const { private_key: key } = await t.business();
      const customerId = await customerWith(key, 500);
      const mug = await createReward(key, { title: 'Mug', points_cost: 200, reward_type: 'physical', stock_quantity: 3 });
      const made = await redeem(key, customerId, { reward_id: mug.id });
      const responses = await Promise.all(Array.from({ length: 6 }, () => cancel(key, customerId, made.body.id)));
      expect(responses.filter((r) => r.status === 200)).toHaveLength(1);
      for (const r of responses.filter((x) => x.status !== 200)) expectError(r, 409, 'redemption_already_cancelled');
      expect(await points(key, customerId)).toEqual({ balance: 500, lifetime_earned: 500, lifetime_redeemed: 0 });
      expect(await reward(key, mug.id)).toMatchObject({ stock_quantity: 3, redeemed_count: 0 });
    });

    it('answers 404 redemption_not_found for an unknown redemption or one of another customer', async () => {
      const { private_key: key } = await t.business();
      const { private_key: otherKey } = await t.business();
      const ann = await customerWith(key, 500);
      const bob = await customerWith(key, 500);
      const mug = await createReward(key, { title: 'Mug', points_cost: 100, reward_type: 'physical' });
      const made = await redeem(key, ann, { reward_id: mug.id });
      expectError(await cancel(key, ann, 'red_doesnotexist00000000'), 404, 'redemption_not_found');
      expectError(await cancel(key, bob, made.body.id), 404, 'redemption_not_found');
      expectError(await cancel(otherKey, ann, made.body.id), 404, 'customer_not_found');
      expectError(await cancel(key, 'cust_doesnotexist0000000', made.body.id), 404, 'customer_not_found');
      expect((await redemptions(key, ann))[0]!.status).toBe('completed');
      expect((await points(key, bob)).balance).toBe(500);
    });
  });

  describe('history', () => {
    it('lists a customer’s redemptions oldest first, in pages, and only theirs', async () => {
      const { private_key: key } = await t.business();
      const ann = await customerWith(key, 1000);
      const bob = await customerWith(key, 1000);
      const mug = await createReward(key, { title: 'Mug', points_cost: 10, reward_type: 'physical' });
      const made: string[] = [];
      for (let i = 0; i < 3; i++) {
        made.push((await redeem(key, ann, { reward_id: mug.id })).body.id);
        await redeem(key, bob, { reward_id: mug.id });
      }
      expect((await redemptions(key, ann)).map((r) => r.id)).toEqual(made);
      const first = await t.request('GET', `/api/v1/customers/${ann}/redemptions?limit=2`, { key });
      expect(first.body.map((r: { id: string }) => r.id)).toEqual(made.slice(0, 2));
      const next = /<([^>]+)>;\s*rel="next"/.exec(first.headers.get('link') ?? '')?.[1];
      const second = await t.request('GET', next!, { key });
      expect(second.body.map((r: { id: string }) => r.id)).toEqual(made.slice(2));
    });

    it('shows redemptions and cancellations in the ledger and the summary’s recent activity', async () => {
      const { private_key: key } = await t.business();
      const customerId = await customerWith(key, 1000);
      const mug = await createReward(key, { title: 'Mug', points_cost: 300, reward_type: 'physical', stock_quantity: 5 });
      const made = await redeem(key, customerId, { reward_id: mug.id, reference: 'r-1' });
      const cancelled = await cancel(key, customerId, made.body.id);
      expect(cancelled.status).toBe(200);
      await redeem(key, customerId, { reward_id: mug.id });

      const lines = await ledger(key, customerId);
      expect(lines.map((l) => [l.type, l.amount, l.balance])).toEqual([
        ['earn', 1000, 1000],
        ['redemption', 300, 700],
        ['redemption_cancelled', 300, 1000],
        ['redemption', 300, 700],
      ]);
      expect(lines[1]!.id).toBe(made.body.id);
      expect(lines[1]).toMatchObject({ description: 'Mug', reference: 'r-1' });

      const summary = await t.request('GET', `/api/v1/customers/${customerId}/summary`, { key });
      expect(summary.body.recent_activity.map((a: { type: string; amount: number }) => [a.type, a.amount])).toEqual([
        ['redemption', 300],
        ['redemption_cancelled', 300],
        ['redemption', 300],
        ['earn', 1000],
      ]);
      expect(summary.body.recent_activity[1].created_at).toBe(cancelled.body.cancelled_at);
      expect(await points(key, customerId)).toEqual({ balance: 700, lifetime_earned: 1000, lifetime_redeemed: 300 });
    });
  });

  describe('under concurrency', () => {
    it('gives 5 units of stock to exactly 5 of 12 customers redeeming in parallel', async () => {
      const { private_key: key } = await t.business();
      const prize = await createReward(key, { title: 'Concert ticket', points_cost: 100, reward_type: 'experience', stock_quantity: 5 });
      const customers: string[] = [];
      for (let i = 0; i < 12; i++) customers.push(await customerWith(key, 250));

      const responses = await Promise.all(customers.map((id) => redeem(key, id, { reward_id: prize.id })));
      const won = responses.filter((r) => r.status === 201);
      const lost = responses.filter((r) => r.status !== 201);
      expect(won).toHaveLength(5);
      expect(lost).toHaveLength(7);
      for (const r of lost) expectError(r, 409, 'out_of_stock');
      expect(await reward(key, prize.id)).toMatchObject({ stock_quantity: 0, redeemed_count: 5 });

      const winners = new Set(won.map((r) => r.body.customer_id as string));
      expect(winners.size).toBe(5);
      for (const id of customers) {
        const p = await points(key, id);
        expect(p).toEqual(winners.has(id) ? { balance: 150, lifetime_earned: 250, lifetime_redeemed: 100 } : { balance: 250, lifetime_earned: 250, lifetime_redeemed: 0 });
        expect(await redemptions(key, id)).toHaveLength(winners.has(id) ? 1 : 0);
      }
    });

    it('never lets one customer’s parallel redemptions overdraw the balance', async () => {
      const { private_key: key } = await t.business();
      const customerId = await customerWith(key, 1000);
      const voucher = await createReward(key, { title: 'Voucher', points_cost: 300, reward_type: 'discount' });

      const responses = await Promise.all(Array.from({ length: 10 }, () => redeem(key, customerId, { reward_id: voucher.id })));
      const ok = responses.filter((r) => r.status === 201);
      const refused = responses.filter((r) => r.status !== 201);
      expect(ok).toHaveLength(3);
      expect(refused).toHaveLength(7);
      for (const r of refused) expectError(r, 422, 'insufficient_points');
      expect(ok.map((r) => r.body.balance).sort((a, b) => b - a)).toEqual([700, 400, 100]);

      expect(await points(key, customerId)).toEqual({ balance: 100, lifetime_earned: 1000, lifetime_redeemed: 900 });
      expect(await reward(key, voucher.id)).toMatchObject({ stock_quantity: null, redeemed_count: 3 });
      const lines = await ledger(key, customerId);
      expect(lines.map((l) => l.balance)).toEqual([1000, 700, 400, 100]);
    });
  });
});

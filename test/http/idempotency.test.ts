import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ProvisionedBusiness } from '../../src/cli/provision.js';
import { startTestApp, type TestApp } from '../support/test-app.js';

describe('Idempotency-Key and duplicate prevention', () => {
  let t: TestApp;
  let biz: ProvisionedBusiness;
  let emails = 0;
  let keys = 0;

  /** A fresh Idempotency-Key, unique within this file. */
  const newKey = () => `idem-${Date.now()}-${++keys}`;

  async function createCustomer(business = biz): Promise<string> {
    const res = await t.request('POST', '/api/v1/customers', { key: business.private_key, body: { email: `idem-${++emails}@example.com` } });
    expect(res.status).toBe(201);
    return res.body.id;
  }

  function transact(customerId: string, body: unknown, idempotencyKey?: string, business = biz) {
    return t.request('POST', `/api/v1/customers/${customerId}/points/transaction`, {
      key: business.private_key,
      body,
      headers: idempotencyKey === undefined ? {} : { 'Idempotency-Key': idempotencyKey },
    });
  }

  async function ledger(customerId: string, business = biz) {
    const res = await t.request('GET', `/api/v1/customers/${customerId}/transactions?limit=200`, { key: business.private_key });
    expect(res.status).toBe(200);
    return res.body as Array<{ id: string; type: string; amount: number; balance: number }>;
  }

  beforeAll(async () => {
    t = await startTestApp();
    biz = await t.business();
  });
  afterAll(() => t.close());

  describe('a retry with the same key and the same request', () => {
    it('replays the first response byte for byte with Idempotent-Replayed: true and records one transaction', async () => {
      const customerId = await createCustomer();
      const key = newKey();
      // Text that must survive the way into the stored answer and back: quotes, backslashes, braces, commas, non-ASCII.
      const body = { type: 'earn', amount: 40, description: 'order 17 "gift" \\ {a,b} NULL é 😀', reference: 'order-17', metadata: { till: 3, 'k"\\': '}{' } };
      const first = await transact(customerId, body, key);
      expect(first.status).toBe(201);
      expect(first.headers.get('idempotent-replayed')).toBeNull();

      const second = await transact(customerId, body, key);
      expect(second.status).toBe(201);
      expect(second.text).toBe(first.text);
      expect(second.headers.get('idempotent-replayed')).toBe('true');
      expect(second.headers.get('content-type')).toMatch(/^application\/json/);

      const third = await transact(customerId, body, key);
      expect(third.text).toBe(first.text);
      expect(third.headers.get('idempotent-replayed')).toBe('true');

      const lines = await ledger(customerId);
      expect(lines.map((l) => l.id)).toEqual([first.body.id]);
      const customer = await t.request('GET', `/api/v1/customers/${customerId}`, { key: biz.private_key });
      expect(customer.body.points_balance).toBe(40);
    });

    it('replays a business error too, even after the balance would now allow the request', async () => {
      const customerId = await createCustomer();
      const key = newKey();
      const deduct = { type: 'deduct', amount: 30 };
      const refused = await transact(customerId, deduct, key);
      expect(refused.status).toBe(422);
      expect(refused.body.code).toBe('insufficient_points');

      const earn = await transact(customerId, { type: 'earn', amount: 100 });
      expect(earn.status).toBe(201);

      const retry = await transact(customerId, deduct, key);
      expect(retry.status).toBe(422);
      expect(retry.text).toBe(refused.text);
      expect(retry.headers.get('idempotent-replayed')).toBe('true');

      const lines = await ledger(customerId);
      expect(lines.map((l) => [l.type, l.amount])).toEqual([['earn', 100]]);
      // A new key is a new request: now it succeeds.
      const fresh = await transact(customerId, deduct, newKey());
      expect(fresh.status).toBe(201);
      expect(fresh.body.balance).toBe(70);
    });

    it('replays the created customer on POST customers', async () => {
      const key = newKey();
      const body = { email: 'replayed@example.com', first_name: 'Ada' };
      const first = await t.request('POST', '/api/v1/customers', { key: biz.private_key, body, headers: { 'Idempotency-Key': key } });
      expect(first.status).toBe(201);
      const second = await t.request('POST', '/api/v1/customers', { key: biz.private_key, body, headers: { 'Idempotency-Key': key } });
      expect(second.status).toBe(201);
      expect(second.text).toBe(first.text);
      expect(second.body.id).toBe(first.body.id);
      expect(second.headers.get('idempotent-replayed')).toBe('true');
      const found = await t.request('GET', '/api/v1/customers?email=replayed@example.com', { key: biz.private_key });
      expect(found.body.map((c: { id: string }) => c.id)).toEqual([first.body.id]);
    });

    it('applies to PATCH and DELETE as well', async () => {
      const customerId = await createCustomer();
      const key = newKey();
      const patch = (body: unknown) =>
        t.request('PATCH', `/api/v1/customers/${customerId}`, { key: biz.private_key, body, headers: { 'Idempotency-Key': key } });
      const first = await patch({ first_name: 'Grace' });
      expect(first.status).toBe(200);
      const renamed = await t.request('PATCH', `/api/v1/customers/${customerId}`, { key: biz.private_key, body: { first_name: 'Hopper' } });
      expect(renamed.body.first_name).toBe('Hopper');
      const replay = await patch({ first_name: 'Grace' });
      expect(replay.text).toBe(first.text);
      expect(replay.headers.get('idempotent-replayed')).toBe('true');
      const now = await t.request('GET', `/api/v1/customers/${customerId}`, { key: biz.private_key });
      expect(now.body.first_name).toBe('Hopper');

      const created = await t.request('POST', '/api/v1/keys', { key: biz.private_key, body: { type: 'private' } });
      const delKey = newKey();
      const revoke = () => t.request('DELETE', `/api/v1/keys/${created.body.id}`, { key: biz.private_key, headers: { 'Idempotency-Key': delKey } });
      const del1 = await revoke();
      expect(del1.status).toBe(200);
      const del2 = await revoke();
      expect(del2.text).toBe(del1.text);
      expect(del2.headers.get('idempotent-replayed')).toBe('true');
    });
  });

  describe('the same key for a different request', () => {
    it('answers 422 idempotency_key_reused for a different body, path or method, and records nothing', async () => {
      const customerId = await createCustomer();
      const otherCustomerId = await createCustomer();
      const key = newKey();
      const first = await transact(customerId, { type: 'earn', amount: 10 }, key);
      expect(first.status).toBe(201);

      const otherBody = await transact(customerId, { type: 'earn', amount: 11 }, key);
      expect(otherBody.status).toBe(422);
      expect(otherBody.body.code).toBe('idempotency_key_reused');
      expect(otherBody.headers.get('idempotent-replayed')).toBeNull();

      const otherPath = await transact(otherCustomerId, { type: 'earn', amount: 10 }, key);
      expect(otherPath.status).toBe(422);
      expect(otherPath.body.code).toBe('idempotency_key_reused');

      const otherMethod = await t.request('PATCH', `/api/v1/customers/${customerId}`, {
        key: biz.private_key,
        body: { first_name: 'Reused' },
        headers: { 'Idempotency-Key': key },
      });
      expect(otherMethod.status).toBe(422);
      expect(otherMethod.body.code).toBe('idempotency_key_reused');

      expect((await ledger(customerId)).map((l) => l.amount)).toEqual([10]);
      expect(await ledger(otherCustomerId)).toEqual([]);
      const customer = await t.request('GET', `/api/v1/customers/${customerId}`, { key: biz.private_key });
      expect(customer.body.first_name).toBeNull();

      // The original request still replays.
      const replay = await transact(customerId, { type: 'earn', amount: 10 }, key);
      expect(replay.text).toBe(first.text);
    });
  });

  describe('concurrent requests with one key', () => {
    it('create exactly one transaction; the others replay it or answer 409 idempotency_key_in_progress with Retry-After: 1', async () => {
      const customerId = await createCustomer();
      const key = newKey();
      const body = { type: 'earn', amount: 7, description: 'burst' };
      const responses = await Promise.all(Array.from({ length: 10 }, () => transact(customerId, body, key)));

      const created = responses.filter((r) => r.status === 201);
      const inProgress = responses.filter((r) => r.status === 409);
      expect(created.length + inProgress.length).toBe(10);
      expect(created.length).toBeGreaterThanOrEqual(1);
      const original = created.find((r) => r.headers.get('idempotent-replayed') === null);
      expect(original).toBeDefined();
      expect(created.filter((r) => r.headers.get('idempotent-replayed') === null)).toHaveLength(1);
      for (const r of created) expect(r.text).toBe(original!.text);
      for (const r of inProgress) {
        expect(r.body.code).toBe('idempotency_key_in_progress');
        expect(r.headers.get('retry-after')).toBe('1');
      }

      const lines = await ledger(customerId);
      expect(lines.map((l) => l.id)).toEqual([original!.body.id]);
      const retry = await transact(customerId, body, key);
      expect(retry.text).toBe(original!.text);
      expect(retry.headers.get('idempotent-replayed')).toBe('true');
    });

    it('create exactly one customer under concurrent POST customers', async () => {
      const key = newKey();
      const body = { email: 'burst@example.com' };
      const responses = await Promise.all(
        Array.from({ length: 8 }, () => t.request('POST', '/api/v1/customers', { key: biz.private_key, body, headers: { 'Idempotency-Key': key } })),
      );
      for (const r of responses) expect([201, 409]).toContain(r.status);
      const ids = new Set(responses.filter((r) => r.status === 201).map((r) => r.body.id));
      expect(ids.size).toBe(1);
      const found = await t.request('GET', '/api/v1/customers?email=burst@example.com', { key: biz.private_key });
      expect(found.body).toHaveLength(1);
    });
    it('gives each of many keys claimed at once its own answer: a key of one business does not hold the same key of another', async () => {
      // Claims made at once share one statement (src/db/batched.ts).
      const other = await t.business();
      const mine = await createCustomer();
      const theirs = await createCustomer(other);
      const shared = newKey();
      const asks = [
        ...Array.from({ length: 12 }, (_, i) => ({ customer: mine, business: biz, key: newKey(), amount: i + 1 })),
        { customer: mine, business: biz, key: shared, amount: 100 },
        { customer: theirs, business: other, key: shared, amount: 200 },
      ];
      const responses = await Promise.all(asks.map((a) => transact(a.customer, { type: 'earn', amount: a.amount }, a.key, a.business)));
      responses.forEach((r, i) => {
        expect(r.status, r.text).toBe(201);
        expect(r.headers.get('idempotent-replayed')).toBeNull();
        expect(r.body.amount).toBe(asks[i]!.amount);
      });
      expect((await ledger(mine)).length).toBe(13);
      expect((await ledger(theirs, other)).map((l) => l.amount)).toEqual([200]);
      const replays = await Promise.all(asks.map((a) => transact(a.customer, { type: 'earn', amount: a.amount }, a.key, a.business)));
      replays.forEach((r, i) => expect([r.headers.get('idempotent-replayed'), r.text]).toEqual(['true', responses[i]!.text]));
    });
  });

  describe('scope and format of the key', () => {
    it('is scoped per business: two businesses may use the same key independently', async () => {
      const other = await t.business();
      const mine = await createCustomer();
      const theirs = await createCustomer(other);
      const key = newKey();
      const body = { type: 'earn', amount: 5 };
      const a = await transact(mine, body, key);
      const b = await transact(theirs, body, key, other);
      expect(a.status).toBe(201);
      expect(b.status).toBe(201);
      expect(b.headers.get('idempotent-replayed')).toBeNull();
      expect(b.body.id).not.toBe(a.body.id);
      expect(b.body.customer_id).toBe(theirs);
      expect((await ledger(mine)).map((l) => l.id)).toEqual([a.body.id]);
      expect((await ledger(theirs, other)).map((l) => l.id)).toEqual([b.body.id]);
    });

    it('refuses a key that is not 1–255 printable ASCII characters with 400, recording nothing', async () => {
      const customerId = await createCustomer();
      for (const bad of ['k'.repeat(256), 'clé-é', '']) {
        const res = await transact(customerId, { type: 'earn', amount: 3 }, bad);
        expect({ length: bad.length, status: res.status, code: res.body?.code }).toEqual({
          length: bad.length,
          status: 400,
          code: 'validation_error',
        });
      }
      expect(await ledger(customerId)).toEqual([]);
      const longest = await transact(customerId, { type: 'earn', amount: 3 }, 'k'.repeat(255));
      expect(longest.status).toBe(201);
      const replay = await transact(customerId, { type: 'earn', amount: 3 }, 'k'.repeat(255));
      expect(replay.headers.get('idempotent-replayed')).toBe('true');
      expect((await ledger(customerId)).map((l) => l.amount)).toEqual([3]);
    });
  });

  describe('a reused reference without an Idempotency-Key', () => {
    it('answers 409 duplicate_transaction carrying the original transaction, and records nothing', async () => {
      const customerId = await createCustomer();
      const first = await transact(customerId, { type: 'earn', amount: 20, reference: 'order-99', description: 'first' });
      expect(first.status).toBe(201);

      const again = await transact(customerId, { type: 'earn', amount: 20, reference: 'order-99', description: 'first' });
      expect(again.status).toBe(409);
      expect(again.body.code).toBe('duplicate_transaction');
      expect(again.body.transaction.id).toBe(first.body.id);
      expect(again.body.transaction).toEqual(first.body);
      expect(again.headers.get('idempotent-replayed')).toBeNull();

      const different = await transact(customerId, { type: 'earn', amount: 500, reference: 'order-99' }, newKey());
      expect(different.status).toBe(409);
      expect(different.body.transaction.id).toBe(first.body.id);

      const lines = await ledger(customerId);
      expect(lines.map((l) => l.id)).toEqual([first.body.id]);
      const customer = await t.request('GET', `/api/v1/customers/${customerId}`, { key: biz.private_key });
      expect(customer.body.points_balance).toBe(20);
    });

    it('lets concurrent requests with one reference create exactly one transaction', async () => {
      const customerId = await createCustomer();
      const responses = await Promise.all(
        Array.from({ length: 8 }, (_, i) => transact(customerId, { type: 'earn', amount: 10 + i, reference: 'order-race' })),
      );
      const created = responses.filter((r) => r.status === 201);
      expect(created).toHaveLength(1);
      for (const r of responses.filter((r) => r.status !== 201)) {
        expect(r.status).toBe(409);
        expect(r.body.code).toBe('duplicate_transaction');
        expect(r.body.transaction.id).toBe(created[0]!.body.id);
      }
      expect((await ledger(customerId)).map((l) => l.id)).toEqual([created[0]!.body.id]);
    });
  });
});

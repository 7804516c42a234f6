import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ProvisionedBusiness } from '../../src/cli/provision.js';
import { startTestApp, type TestApp, type TestResponse } from '../support/test-app.js';

describe('tenancy', () => {
  let t: TestApp;
  let a: ProvisionedBusiness;
  let b: ProvisionedBusiness;
  let aliceOfA: Record<string, any>;
  let aliceEarn: Record<string, any>;
  let bobOfB: Record<string, any>;

  beforeAll(async () => {
    t = await startTestApp();
    a = await t.business();
    b = await t.business();
    const created = await t.request('POST', '/api/v1/customers', {
      key: a.private_key,
      body: { email: 'Alice@example.com', phone: '+1 555 0100', external_reference: 'a-ext-1', first_name: 'Alice' },
    });
    expect(created.status).toBe(201);
    aliceOfA = created.body;
    const earned = await t.request('POST', `/api/v1/customers/${aliceOfA.id}/points/transaction`, {
      key: a.private_key,
      body: { type: 'earn', amount: 70, reference: 'a-order-1' },
    });
    expect(earned.status).toBe(201);
    aliceEarn = earned.body;
    const bob = await t.request('POST', '/api/v1/customers', { key: b.private_key, body: { email: 'bob@example.com' } });
    expect(bob.status).toBe(201);
    bobOfB = bob.body;
  });
  afterAll(() => t.close());

  const NEVER_EXISTED = 'cust_neverExisted0000000';

  /** 404 customer_not_found, worded as for an id that never existed: nothing hints the customer exists elsewhere. */
  async function expectNotFound(response: TestResponse, id: string) {
    expect(response.status, response.text).toBe(404);
    expect(response.body).toMatchObject({ code: 'customer_not_found', message: expect.any(String), request_id: expect.stringMatching(/^req_/) });
    const unknown = await t.request('GET', `/api/v1/customers/${NEVER_EXISTED}`, { key: b.private_key });
    expect(response.body.message.replaceAll(id, '<id>')).toBe(unknown.body.message.replaceAll(NEVER_EXISTED, '<id>'));
    expect(response.text).not.toContain(a.business_id);
    expect(response.text).not.toContain('Alice');
  }

  /** A's customer, its ledger and its stream, read with A's own key. */
  async function aliceAsSeenByA() {
    const key = a.private_key;
    return {
      customer: (await t.request('GET', `/api/v1/customers/${aliceOfA.id}`, { key })).body,
      ledger: (await t.request('GET', `/api/v1/customers/${aliceOfA.id}/transactions`, { key })).body,
      stream: (await t.request('GET', `/api/v1/customers/${aliceOfA.id}/stream`, { key })).body,
    };
  }

  it("answers 404 customer_not_found to another business's key on every customer endpoint", async () => {
    const before = await aliceAsSeenByA();
    const id = aliceOfA.id as string;
    for (const key of [b.private_key, b.public_key]) {
      await expectNotFound(await t.request('GET', `/api/v1/customers/${id}`, { key }), id);
      await expectNotFound(await t.request('GET', `/api/v1/customers/${id}/summary`, { key }), id);
      await expectNotFound(await t.request('GET', `/api/v1/customers/${id}/transactions`, { key }), id);
    }
    await expectNotFound(await t.request('GET', `/api/v1/customers/${id}/stream`, { key: b.private_key }), id);
    await expectNotFound(await t.request('PATCH', `/api/v1/customers/${id}`, { key: b.private_key, body: { first_name: 'Mallory' } }), id);
    for (const body of [
      { type: 'earn', amount: 1000 },
      { type: 'deduct', amount: 10 },
      { type: 'adjust', amount: -70 },
      { type: 'earn', amount: 5, reference: 'a-order-1' },
    ]) {
      await expectNotFound(await t.request('POST', `/api/v1/customers/${id}/points/transaction`, { key: b.private_key, body }), id);
    }
    // Nothing B tried changed A's customer.
    expect(await aliceAsSeenByA()).toEqual(before);
    expect(before.customer).toMatchObject({ first_name: 'Alice', points_balance: 70 });
    expect(before.ledger).toEqual([aliceEarn]);
  });

  it("does not reveal another business's duplicate reference", async () => {
    // B's key using A's reference on A's customer got 404 above, not 409 carrying A's transaction.
    const response = await t.request('POST', `/api/v1/customers/${aliceOfA.id}/points/transaction`, {
      key: b.private_key,
      body: { type: 'earn', amount: 1, reference: 'a-order-1' },
    });
    expect(response.status).toBe(404);
    expect(response.text).not.toContain(aliceEarn.id);
  });

  it('lists only the business’s own customers', async () => {
    const listA = await t.request('GET', '/api/v1/customers', { key: a.private_key });
    const listB = await t.request('GET', '/api/v1/customers', { key: b.private_key });
    expect(listA.body.map((c: { id: string }) => c.id)).toEqual([aliceOfA.id]);
    expect(listB.body.map((c: { id: string }) => c.id)).toEqual([bobOfB.id]);
  });

  it("never leaks through filters: B's list filtered by A's values is empty", async () => {
    const key = b.private_key;
    for (const query of [
      '?email=alice%40example.com',
      '?email=ALICE%40EXAMPLE.COM',
      `?phone=${encodeURIComponent('+1 555 0100')}`,
      '?external_reference=a-ext-1',
      '?limit=200',
    ]) {
      const response = await t.request('GET', `/api/v1/customers${query}`, { key });
      expect(response.status, response.text).toBe(200);
      expect(response.text, query).not.toContain(aliceOfA.id);
      if (query !== '?limit=200') expect(response.body, query).toEqual([]);
    }
  });

  it("refuses A's customer id as a cursor in B's list", async () => {
    const response = await t.request('GET', `/api/v1/customers?starting_after=${aliceOfA.id}`, { key: b.private_key });
    expect(response.status).toBe(400);
    expect(response.body.code).toBe('validation_error');
    expect(response.text).not.toContain('Alice');
  });

  it("keeps each business's email and external_reference space separate", async () => {
    const sameInB = await t.request('POST', '/api/v1/customers', {
      key: b.private_key,
      body: { email: 'alice@EXAMPLE.com', external_reference: 'a-ext-1' },
    });
    expect(sameInB.status, sameInB.text).toBe(201);
    expect(sameInB.body.id).not.toBe(aliceOfA.id);
    expect(sameInB.body.points_balance).toBe(0);

    // Each business's filter finds its own holder.
    const inA = await t.request('GET', '/api/v1/customers?external_reference=a-ext-1', { key: a.private_key });
    const inB = await t.request('GET', '/api/v1/customers?external_reference=a-ext-1', { key: b.private_key });
    expect(inA.body.map((c: { id: string }) => c.id)).toEqual([aliceOfA.id]);
    expect(inB.body.map((c: { id: string }) => c.id)).toEqual([sameInB.body.id]);

    // A clash inside B names B's customer, never A's.
    const clash = await t.request('POST', '/api/v1/customers', { key: b.private_key, body: { email: 'ALICE@example.com' } });
    expect(clash.status).toBe(409);
    expect(clash.body.customer_id).toBe(sameInB.body.id);
  });

  it("keeps a customer's reference space separate from another business's customer", async () => {
    const other = await t.request('POST', '/api/v1/customers', { key: b.private_key, body: { email: 'refs@example.com' } });
    const sameReference = await t.request('POST', `/api/v1/customers/${other.body.id}/points/transaction`, {
      key: b.private_key,
      body: { type: 'earn', amount: 3, reference: 'a-order-1' },
    });
    expect(sameReference.status, sameReference.text).toBe(201);
  });

  it("refuses A's transaction id as a cursor in a ledger read by B", async () => {
    const response = await t.request('GET', `/api/v1/customers/${bobOfB.id}/transactions?starting_after=${aliceEarn.id}`, {
      key: b.private_key,
    });
    expect(response.status).toBe(400);
    expect(response.body.code).toBe('validation_error');
  });
});

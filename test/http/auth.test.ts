import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ProvisionedBusiness } from '../../src/cli/provision.js';
import { startTestApp, type TestApp, type TestResponse } from '../support/test-app.js';

const ALL_PERMISSIONS = [
  'customers:read',
  'customers:write',
  'points:read',
  'points:write',
  'rewards:read',
  'rewards:write',
  'webhooks:write',
  'keys:write',
];

describe('authentication and permissions', () => {
  let t: TestApp;
  let biz: ProvisionedBusiness;
  let customerId: string;
  let emails = 0;

  /** A well-formed key string that was never issued. */
  const unknownKey = (prefix = 'sk_live_') => prefix + 'A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8S9t0'.split('').reverse().join('');

  async function createCustomer(key = biz.private_key): Promise<string> {
    const res = await t.request('POST', '/api/v1/customers', { key, body: { email: `auth-${++emails}@example.com` } });
    expect(res.status).toBe(201);
    return res.body.id;
  }

  /** A private key of `biz` holding exactly `permissions`. */
  async function restrictedKey(permissions: string[]): Promise<{ id: string; key: string }> {
    const res = await t.request('POST', '/api/v1/keys', { key: biz.private_key, body: { type: 'private', permissions } });
    expect(res.status).toBe(201);
    return { id: res.body.id, key: res.body.key };
  }

  function expectError(res: TestResponse, status: number, code: string) {
    expect({ status: res.status, code: res.body?.code }).toEqual({ status, code });
  }

  beforeAll(async () => {
    t = await startTestApp();
    biz = await t.business();
    customerId = await createCustomer();
    const earn = await t.request('POST', `/api/v1/customers/${customerId}/points/transaction`, {
      key: biz.private_key,
      body: { type: 'earn', amount: 25 },
    });
    expect(earn.status).toBe(201);
  });
  afterAll(() => t.close());

  describe('presenting a key', () => {
    it('accepts the key in X-API-Key', async () => {
      const res = await t.request('GET', '/api/v1/customers', { headers: { 'X-API-Key': biz.private_key } });
      expect(res.status).toBe(200);
      expect(res.body.map((c: { id: string }) => c.id)).toContain(customerId);
    });

    it('accepts the key as Authorization: Bearer', async () => {
      const res = await t.request('GET', '/api/v1/customers', { headers: { Authorization: `Bearer ${biz.private_key}` } });
      expect(res.status).toBe(200);
      expect(res.body.map((c: { id: string }) => c.id)).toContain(customerId);
    });

    it('accepts both headers when they carry the same key', async () => {
      const res = await t.request('GET', '/api/v1/customers', {
        headers: { 'X-API-Key': biz.private_key, Authorization: `Bearer ${biz.private_key}` },
      });
      expect(res.status).toBe(200);
    });

    it('refuses both headers carrying different keys with 401 ambiguous_api_key', async () => {
      const res = await t.request('GET', '/api/v1/customers', {
        headers: { 'X-API-Key': biz.private_key, Authorization: `Bearer ${biz.public_key}` },
      });
      expectError(res, 401, 'ambiguous_api_key');
    });

    it('refuses a request without a key with 401 missing_api_key', async () => {
      expectError(await t.request('GET', '/api/v1/customers'), 401, 'missing_api_key');
      expectError(await t.request('POST', '/api/v1/customers', { body: { email: 'nokey@example.com' } }), 401, 'missing_api_key');
    });

    it('refuses an unknown key with 401 invalid_api_key', async () => {
      expectError(await t.request('GET', '/api/v1/customers', { key: unknownKey() }), 401, 'invalid_api_key');
      expectError(await t.request('GET', '/api/v1/customers', { key: unknownKey('pk_live_') }), 401, 'invalid_api_key');
    });

    it('refuses malformed keys with 401 invalid_api_key', async () => {
      const malformed = ['hello', 'sk_live_short', 'sk_test_' + biz.private_key.slice(8), `${biz.private_key}!`, biz.private_key.slice(0, 20)];
      for (const key of malformed) {
        expectError(await t.request('GET', '/api/v1/customers', { key }), 401, 'invalid_api_key');
      }
      const bearer = await t.request('GET', '/api/v1/customers', { headers: { Authorization: 'Bearer not-a-key' } });
      expectError(bearer, 401, 'invalid_api_key');
    });

    it('refuses a revoked key with 401 invalid_api_key on the very next request', async () => {
      const { id, key } = await restrictedKey(['customers:read']);
      expect((await t.request('GET', '/api/v1/customers', { key })).status).toBe(200);
      const revoked = await t.request('DELETE', `/api/v1/keys/${id}`, { key: biz.private_key });
      expect(revoked.status).toBe(200);
      expectError(await t.request('GET', '/api/v1/customers', { key }), 401, 'invalid_api_key');
      expectError(await t.request('GET', '/api/v1/customers', { headers: { Authorization: `Bearer ${key}` } }), 401, 'invalid_api_key');
    });

    it('lets a key revoke itself, after which it no longer works', async () => {
      const { id, key } = await restrictedKey(['keys:write']);
      expect((await t.request('DELETE', `/api/v1/keys/${id}`, { key })).status).toBe(200);
      expectError(await t.request('GET', '/api/v1/keys', { key }), 401, 'invalid_api_key');
    });
  });

  describe('public keys', () => {
    const writes = () => [
      { name: 'POST customers', method: 'POST', path: '/api/v1/customers', body: { email: 'public-write@example.com' } },
      { name: 'PATCH customer', method: 'PATCH', path: `/api/v1/customers/${customerId}`, body: { first_name: 'Eve' } },
      {
        name: 'POST points transaction',
        method: 'POST',
        path: `/api/v1/customers/${customerId}/points/transaction`,
        body: { type: 'earn', amount: 1000 },
      },
      { name: 'POST keys', method: 'POST', path: '/api/v1/keys', body: { type: 'private' } },
      { name: 'DELETE key', method: 'DELETE', path: '/api/v1/keys/KEY_ID', body: undefined },
    ];

    it('are refused on every write endpoint with 403 public_key_not_allowed, and nothing changes', async () => {
      const victim = await restrictedKey(['customers:read']);
      const before = await t.request('GET', `/api/v1/customers/${customerId}`, { key: biz.private_key });
      for (const w of writes()) {
        const res = await t.request(w.method, w.path.replace('KEY_ID', victim.id), { key: biz.public_key, body: w.body });
        expect({ endpoint: w.name, status: res.status, code: res.body?.code }).toEqual({
          endpoint: w.name,
          status: 403,
          code: 'public_key_not_allowed',
        });
      }
      const after = await t.request('GET', `/api/v1/customers/${customerId}`, { key: biz.private_key });
      expect(after.body).toEqual(before.body);
      const list = await t.request('GET', '/api/v1/customers?email=public-write@example.com', { key: biz.private_key });
      expect(list.body).toEqual([]);
      expect((await t.request('GET', '/api/v1/customers', { key: victim.key })).status).toBe(200);
    });

    it('are refused on writes even when sent as Authorization: Bearer', async () => {
      const res = await t.request('POST', '/api/v1/customers', {
        headers: { Authorization: `Bearer ${biz.public_key}` },
        body: { email: 'bearer-public@example.com' },
      });
      expectError(res, 403, 'public_key_not_allowed');
    });

    it('can read customers, a customer, its summary and its transactions', async () => {
      const key = biz.public_key;
      const { email } = (await t.request('GET', `/api/v1/customers/${customerId}`, { key })).body;
      const list = await t.request('GET', `/api/v1/customers?email=${encodeURIComponent(email)}`, { key });
      expect(list.status).toBe(200);
      expect(list.body.map((c: { id: string }) => c.id)).toEqual([customerId]);

      const one = await t.request('GET', `/api/v1/customers/${customerId}`, { key });
      expect(one.status).toBe(200);
      expect(one.body.id).toBe(customerId);

      const summary = await t.request('GET', `/api/v1/customers/${customerId}/summary`, { key });
      expect(summary.status).toBe(200);
      expect(summary.body.points.balance).toBe(25);

      const transactions = await t.request('GET', `/api/v1/customers/${customerId}/transactions`, { key });
      expect(transactions.status).toBe(200);
      expect(transactions.body.map((x: { amount: number }) => x.amount)).toEqual([25]);
    });

    it('are refused on the raw event stream (private keys only) with 403 public_key_not_allowed', async () => {
      expectError(await t.request('GET', `/api/v1/customers/${customerId}/stream`, { key: biz.public_key }), 403, 'public_key_not_allowed');
      expect((await t.request('GET', `/api/v1/customers/${customerId}/stream`, { key: biz.private_key })).status).toBe(200);
    });
  });

  describe('restricted private keys', () => {
    const endpoints = (tag: string) => [
      { name: 'GET customers', method: 'GET', path: '/api/v1/customers', needs: ['customers:read'] },
      { name: 'GET customer', method: 'GET', path: `/api/v1/customers/${customerId}`, needs: ['customers:read'] },
      {
        name: 'POST customers',
        method: 'POST',
        path: '/api/v1/customers',
        body: { email: `restricted-${tag}@example.com` },
        needs: ['customers:write'],
      },
      {
        name: 'PATCH customer',
        method: 'PATCH',
        path: `/api/v1/customers/${customerId}`,
        body: { last_name: 'Restricted' },
        needs: ['customers:write'],
      },
      { name: 'GET summary', method: 'GET', path: `/api/v1/customers/${customerId}/summary`, needs: ['customers:read', 'points:read'] },
      { name: 'GET transactions', method: 'GET', path: `/api/v1/customers/${customerId}/transactions`, needs: ['points:read'] },
      { name: 'GET stream', method: 'GET', path: `/api/v1/customers/${customerId}/stream`, needs: ['points:read'] },
      {
        name: 'POST points transaction',
        method: 'POST',
        path: `/api/v1/customers/${customerId}/points/transaction`,
        body: { type: 'earn', amount: 500 },
        needs: ['points:write'],
      },
      {
        name: 'POST keys',
        method: 'POST',
        path: '/api/v1/keys',
        body: { type: 'private', permissions: ['keys:write'] },
        needs: ['keys:write'],
      },
      { name: 'GET keys', method: 'GET', path: '/api/v1/keys', needs: ['keys:write'] },
      { name: 'DELETE key', method: 'DELETE', path: '/api/v1/keys/KEY_ID', needs: ['keys:write'] },
    ];

    it('are refused with 403 insufficient_permissions naming each missing permission', async () => {
      const victim = await restrictedKey(['customers:read']);
      for (const endpoint of endpoints('refused')) {
        for (const missing of endpoint.needs) {
          const { key } = await restrictedKey(ALL_PERMISSIONS.filter((p) => p !== missing));
          const res = await t.request(endpoint.method, endpoint.path.replace('KEY_ID', victim.id), { key, body: endpoint.body });
          expect({ endpoint: endpoint.name, missing, status: res.status, code: res.body?.code }).toEqual({
            endpoint: endpoint.name,
            missing,
            status: 403,
            code: 'insufficient_permissions',
          });
          expect(res.body.message).toContain(missing);
        }
      }
      // None of the refused writes happened.
      const customer = await t.request('GET', `/api/v1/customers/${customerId}`, { key: biz.private_key });
      expect(customer.body.last_name).toBeNull();
      expect(customer.body.points_balance).toBe(25);
      expect((await t.request('GET', '/api/v1/customers?email=restricted-refused@example.com', { key: biz.private_key })).body).toEqual([]);
      expect((await t.request('GET', '/api/v1/customers', { key: victim.key })).status).toBe(200);
    });

    it('are allowed on each endpoint when they hold exactly the permissions it needs', async () => {
      const victim = await restrictedKey(['keys:write']); // a key may revoke only keys whose permissions it holds
      for (const endpoint of endpoints('allowed')) {
        const { key } = await restrictedKey(endpoint.needs);
        const res = await t.request(endpoint.method, endpoint.path.replace('KEY_ID', victim.id), { key, body: endpoint.body });
        expect({ endpoint: endpoint.name, ok: res.status === 200 || res.status === 201 }).toEqual({ endpoint: endpoint.name, ok: true });
      }
    });
  });

  describe('CORS', () => {
    it('lets any origin read responses to public-key requests', async () => {
      const res = await t.request('GET', '/api/v1/tiers', { key: biz.public_key, headers: { Origin: 'https://shop.example' } });
      expect(res.status).toBe(200);
      expect(res.headers.get('access-control-allow-origin')).toBe('*');
    });

    it('lets any origin read the error when a public key attempts a write', async () => {
      const res = await t.request('POST', '/api/v1/customers', {
        key: biz.public_key,
        headers: { Origin: 'https://shop.example' },
        body: { email: 'cors@example.com' },
      });
      expect(res.status).toBe(403);
      expect(res.headers.get('access-control-allow-origin')).toBe('*');
    });

    it('sends no CORS headers on private-key requests', async () => {
      const res = await t.request('GET', '/api/v1/customers', { key: biz.private_key, headers: { Origin: 'https://shop.example' } });
      expect(res.status).toBe(200);
      expect(res.headers.get('access-control-allow-origin')).toBeNull();
    });

    it('answers a preflight with 204 and the allowed request headers', async () => {
      const res = await t.request('OPTIONS', '/api/v1/customers', {
        headers: {
          Origin: 'https://shop.example',
          'Access-Control-Request-Method': 'GET',
          'Access-Control-Request-Headers': 'x-api-key',
        },
      });
      expect(res.status).toBe(204);
      expect(res.headers.get('access-control-allow-origin')).toBe('*');
      const allowed = (res.headers.get('access-control-allow-headers') ?? '').split(',').map((h) => h.trim().toLowerCase());
      for (const header of ['x-api-key', 'authorization', 'content-type', 'idempotency-key']) {
        expect(allowed).toContain(header);
      }
    });
  });
});

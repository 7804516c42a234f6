import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ProvisionedBusiness } from '../../src/cli/provision.js';
import { startTestApp, type RequestOptions, type TestApp, type TestResponse } from '../support/test-app.js';

const REQUEST_ID = /^req_[0-9A-Za-z_-]{16,}$/;

interface ErrorCase {
  name: string;
  method: string;
  path: string;
  options?: RequestOptions;
  status: number;
  code: string;
  /** Body fields allowed besides code, message and request_id. */
  extras?: string[];
}

/** The contract's error body, whatever the failure: JSON, never HTML or empty, request id matching the header. */
function expectErrorBody(res: TestResponse, extras: string[] = []) {
  expect(res.text.length).toBeGreaterThan(0);
  expect(res.text.trimStart().startsWith('<')).toBe(false);
  expect(res.headers.get('content-type') ?? '').toMatch(/^application\/json/);
  expect(res.body).toBeTypeOf('object');
  expect(res.body.code).toMatch(/^[a-z_]+$/);
  expect(typeof res.body.message).toBe('string');
  expect(res.body.message.length).toBeGreaterThan(0);
  expect(res.body.request_id).toBe(res.headers.get('x-request-id'));
  const unexpected = Object.keys(res.body).filter((k) => !['code', 'message', 'request_id', ...extras].includes(k));
  expect(unexpected).toEqual([]);
  expect(res.text).not.toMatch(/\bat [^\s]+ \(|node_modules|\.ts:\d+/);
}

function detailPaths(res: TestResponse): string[] {
  expect(Array.isArray(res.body.details)).toBe(true);
  for (const d of res.body.details) {
    expect(typeof d.path).toBe('string');
    expect(typeof d.message).toBe('string');
    expect(d.message.length).toBeGreaterThan(0);
  }
  return res.body.details.map((d: { path: string }) => d.path);
}

describe('requests, responses and the error model', () => {
  let t: TestApp;
  let biz: ProvisionedBusiness;
  let customerId: string;
  let txnPath: string;

  /** What a failed request must leave untouched: the customers, this customer's ledger, the keys. */
  async function snapshot() {
    const key = biz.private_key;
    const [customers, ledger, keys] = await Promise.all([
      t.request('GET', '/api/v1/customers?limit=200', { key }),
      t.request('GET', `/api/v1/customers/${customerId}/transactions?limit=200`, { key }),
      t.request('GET', '/api/v1/keys?limit=200', { key }),
    ]);
    return { customers: customers.body, ledger: ledger.body, keys: keys.body };
  }

  beforeAll(async () => {
    t = await startTestApp();
    biz = await t.business();
    const created = await t.request('POST', '/api/v1/customers', { key: biz.private_key, body: { email: 'errors@example.com' } });
    expect(created.status).toBe(201);
    customerId = created.body.id;
    txnPath = `/api/v1/customers/${customerId}/points/transaction`;
    const earn = await t.request('POST', txnPath, { key: biz.private_key, body: { type: 'earn', amount: 10, reference: 'order-1' } });
    expect(earn.status).toBe(201);
  });
  afterAll(() => t.close());

  const cases = (): ErrorCase[] => {
    const key = biz.private_key;
    const big = { email: 'big@example.com', metadata: { blob: 'x'.repeat(70 * 1024) } };
    return [
      { name: 'no key', method: 'GET', path: '/api/v1/customers', status: 401, code: 'missing_api_key' },
      { name: 'unknown key', method: 'POST', path: '/api/v1/customers', options: { key: 'sk_live_nope', body: { email: 'x@example.com' } }, status: 401, code: 'invalid_api_key' },
      { name: 'public key write', method: 'POST', path: '/api/v1/customers', options: { key: biz.public_key, body: { email: 'pub@example.com' } }, status: 403, code: 'public_key_not_allowed' },
      { name: 'unknown customer', method: 'GET', path: '/api/v1/customers/cust_unknown00000000000', options: { key }, status: 404, code: 'customer_not_found' },
      { name: 'earn for unknown customer', method: 'POST', path: '/api/v1/customers/cust_unknown00000000000/points/transaction', options: { key, body: { type: 'earn', amount: 5 } }, status: 404, code: 'customer_not_found' },
      { name: 'unknown route in /api/v1', method: 'GET', path: '/api/v1/nothing-here', options: { key }, status: 404, code: 'not_found' },
      { name: 'unknown POST route in /api/v1', method: 'POST', path: '/api/v1/nothing-here', options: { key, body: {} }, status: 404, code: 'not_found' },
      { name: 'unknown route outside /api/v1', method: 'GET', path: '/nothing-here', status: 404, code: 'not_found' },
      { name: 'root', method: 'GET', path: '/', status: 404, code: 'not_found' },
      { name: 'another API version', method: 'GET', path: '/api/v2/customers', options: { key }, status: 404, code: 'not_found' },
      { name: 'wrong method on a collection', method: 'PUT', path: '/api/v1/customers', options: { key, body: { email: 'put@example.com' } }, status: 405, code: 'method_not_allowed' },
      { name: 'wrong method on a customer', method: 'DELETE', path: `/api/v1/customers/${customerId}`, options: { key }, status: 405, code: 'method_not_allowed' },
      { name: 'wrong method on transactions', method: 'GET', path: txnPath, options: { key }, status: 405, code: 'method_not_allowed' },
      { name: 'invalid JSON', method: 'POST', path: '/api/v1/customers', options: { key, rawBody: '{"email": "a@example.com",', headers: { 'content-type': 'application/json' } }, status: 400, code: 'invalid_json' },
      { name: 'no content type', method: 'POST', path: '/api/v1/customers', options: { key, rawBody: '{"email":"ct@example.com"}' }, status: 415, code: 'unsupported_media_type' },
      { name: 'text/plain body', method: 'POST', path: txnPath, options: { key, rawBody: '{"type":"earn","amount":1}', headers: { 'content-type': 'text/plain' } }, status: 415, code: 'unsupported_media_type' },
      { name: 'body over 64 KiB', method: 'POST', path: '/api/v1/customers', options: { key, body: big }, status: 413, code: 'payload_too_large' },
      { name: 'unknown field', method: 'POST', path: '/api/v1/customers', options: { key, body: { email: 'typo@example.com', frist_name: 'Ada' } }, status: 400, code: 'validation_error', extras: ['details'] },
      { name: 'wrong type', method: 'POST', path: txnPath, options: { key, body: { type: 'earn', amount: '10' } }, status: 400, code: 'validation_error', extras: ['details'] },
      { name: 'insufficient points', method: 'POST', path: txnPath, options: { key, body: { type: 'deduct', amount: 1000 } }, status: 422, code: 'insufficient_points', extras: ['balance'] },
      { name: 'reused reference', method: 'POST', path: txnPath, options: { key, body: { type: 'earn', amount: 99, reference: 'order-1' } }, status: 409, code: 'duplicate_transaction', extras: ['transaction'] },
      { name: 'unknown key id', method: 'DELETE', path: '/api/v1/keys/key_unknown000000000000', options: { key }, status: 404, code: 'key_not_found' },
    ];
  };

  describe('the error body', () => {
    it('is {code, message, request_id} (plus documented extras) for every kind of failure, and never changes anything', async () => {
      const before = await snapshot();
      for (const c of cases()) {
        const res = await t.request(c.method, c.path, c.options);
        expect({ case: c.name, status: res.status, code: res.body?.code }).toEqual({ case: c.name, status: c.status, code: c.code });
        expectErrorBody(res, c.extras);
      }
      expect(await snapshot()).toEqual(before);
    });

    it('carries the caller’s own X-Request-Id as request_id', async () => {
      const res = await t.request('GET', '/api/v1/customers', { headers: { 'X-Request-Id': 'trace-42_abc' } });
      expect(res.status).toBe(401);
      expect(res.headers.get('x-request-id')).toBe('trace-42_abc');
      expect(res.body.request_id).toBe('trace-42_abc');
    });
  });

  describe('X-Request-Id', () => {
    it('is on every response, generated as req_… and different each time', async () => {
      const key = biz.private_key;
      const requests: Array<[string, string, RequestOptions?]> = [
        ['GET', '/api/v1/customers', { key }],
        ['GET', `/api/v1/customers/${customerId}`, { key }],
        ['POST', '/api/v1/customers', { key, body: { email: 'rid@example.com' } }],
        ['GET', '/api/v1/customers'],
        ['GET', '/nowhere'],
        ['GET', '/healthz'],
      ];
      const seen: Array<{ request: string; id: string | null }> = [];
      for (const [method, path, options] of requests) {
        const res = await t.request(method, path, options);
        seen.push({ request: `${method} ${path} → ${res.status}`, id: res.headers.get('x-request-id') });
      }
      for (const s of seen) expect(s).toEqual({ request: s.request, id: expect.stringMatching(REQUEST_ID) });
      expect(new Set(seen.map((s) => s.id)).size).toBe(seen.length);
    });

    it('is on the answer to a CORS preflight too', async () => {
      const res = await t.request('OPTIONS', '/api/v1/customers', {
        headers: { Origin: 'https://shop.example', 'Access-Control-Request-Method': 'GET' },
      });
      expect(res.status).toBe(204);
      expect(res.headers.get('x-request-id')).toMatch(REQUEST_ID);
    });

    it('echoes the caller’s own value on success', async () => {
      const res = await t.request('GET', '/api/v1/customers', { key: biz.private_key, headers: { 'X-Request-Id': 'my-trace-0001' } });
      expect(res.status).toBe(200);
      expect(res.headers.get('x-request-id')).toBe('my-trace-0001');
    });
  });

  describe('request bodies', () => {
    it('refuses unparsable JSON with 400 invalid_json', async () => {
      for (const rawBody of ['{', 'not json', '{"type":"earn","amount":5,}', "{'type':'earn'}"]) {
        const res = await t.request('POST', txnPath, { key: biz.private_key, rawBody, headers: { 'content-type': 'application/json' } });
        expect({ rawBody, status: res.status, code: res.body?.code }).toEqual({ rawBody, status: 400, code: 'invalid_json' });
        expectErrorBody(res);
      }
    });

    it('refuses a body sent without Content-Type: application/json with 415, and accepts it with a charset', async () => {
      const form = await t.request('POST', '/api/v1/customers', {
        key: biz.private_key,
        rawBody: 'email=form@example.com',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      });
      expect(form.status).toBe(415);
      expect(form.body.code).toBe('unsupported_media_type');
      const patch = await t.request('PATCH', `/api/v1/customers/${customerId}`, { key: biz.private_key, rawBody: '{"first_name":"Ada"}' });
      expect(patch.status).toBe(415);
      const withCharset = await t.request('POST', '/api/v1/customers', {
        key: biz.private_key,
        rawBody: '{"email":"charset@example.com"}',
        headers: { 'content-type': 'application/json; charset=utf-8' },
      });
      expect(withCharset.status).toBe(201);
    });

    it('refuses a body over 64 KiB with 413 payload_too_large', async () => {
      const rawBody = JSON.stringify({ type: 'earn', amount: 1, description: 'y'.repeat(64 * 1024) });
      const res = await t.request('POST', txnPath, { key: biz.private_key, rawBody, headers: { 'content-type': 'application/json' } });
      expect(res.status).toBe(413);
      expect(res.body.code).toBe('payload_too_large');
      expectErrorBody(res);
    });

    it('refuses an unknown field with 400 validation_error naming it in details', async () => {
      const res = await t.request('POST', txnPath, { key: biz.private_key, body: { type: 'earn', amount: 5, ammount: 5 } });
      expect(res.status).toBe(400);
      expect(res.body.code).toBe('validation_error');
      expect(detailPaths(res)).toContain('ammount');
      expectErrorBody(res, ['details']);
    });

    it('refuses text holding the NUL character (which PostgreSQL cannot store) with 400 naming its path, changing nothing', async () => {
      const before = await snapshot();
      for (const [path, body] of [
        ['metadata.note', { type: 'earn', amount: 5, metadata: { note: 'a\u0000b' } }],
        ['description', { type: 'earn', amount: 5, description: '\u0000' }],
        ['metadata.tags.1', { type: 'earn', amount: 5, metadata: { tags: ['ok', 'x\u0000'] } }],
      ] as const) {
        const res = await t.request('POST', txnPath, { key: biz.private_key, body });
        expect(res.status).toBe(400);
        expect(res.body.code).toBe('validation_error');
        expect(detailPaths(res)).toEqual([path]);
        expectErrorBody(res, ['details']);
      }
      expect(await snapshot()).toEqual(before);
    });

    it('accepts metadata of exactly 8 KiB serialized and refuses one byte more', async () => {
      // {"a":"…"} serializes to the string's length + 8 bytes.
      const exact = { a: 'm'.repeat(8 * 1024 - 8) };
      expect(JSON.stringify(exact).length).toBe(8 * 1024);
      const ok = await t.request('POST', '/api/v1/customers', { key: biz.private_key, body: { email: 'meta-ok@example.com', metadata: exact } });
      expect(ok.status).toBe(201);
      expect(ok.body.metadata).toEqual(exact);

      const over = { a: 'm'.repeat(8 * 1024 - 7) };
      const res = await t.request('POST', '/api/v1/customers', { key: biz.private_key, body: { email: 'meta-over@example.com', metadata: over } });
      expect(res.status).toBe(400);
      expect(res.body.code).toBe('validation_error');
      expect(detailPaths(res)).toContain('metadata');
      const txn = await t.request('POST', txnPath, { key: biz.private_key, body: { type: 'earn', amount: 1, metadata: over } });
      expect(txn.status).toBe(400);
      expect(detailPaths(txn)).toContain('metadata');
      const listed = await t.request('GET', '/api/v1/customers?email=meta-over@example.com', { key: biz.private_key });
      expect(listed.body).toEqual([]);
    });

    it('names the path of every missing or mistyped field', async () => {
      const key = biz.private_key;
      const checks: Array<{ method: string; path: string; body: unknown; expected: string[] }> = [
        { method: 'POST', path: txnPath, body: { amount: 10 }, expected: ['type'] },
        { method: 'POST', path: txnPath, body: { type: 'earn' }, expected: ['amount'] },
        { method: 'POST', path: txnPath, body: { type: 'earn', amount: 1.5 }, expected: ['amount'] },
        { method: 'POST', path: txnPath, body: { type: 'bonus', amount: 10 }, expected: ['type'] },
        { method: 'POST', path: txnPath, body: { type: 'earn', amount: 10, description: 7, metadata: 'x' }, expected: ['description', 'metadata'] },
        { method: 'POST', path: '/api/v1/customers', body: { email: 42 }, expected: ['email'] },
        { method: 'POST', path: '/api/v1/customers', body: { email: 'not-an-email' }, expected: ['email'] },
        { method: 'PATCH', path: `/api/v1/customers/${customerId}`, body: { metadata: [1, 2] }, expected: ['metadata'] },
        { method: 'POST', path: '/api/v1/keys', body: { type: 'private', permissions: 'customers:read' }, expected: ['permissions'] },
      ];
      const before = await snapshot();
      for (const check of checks) {
        const res = await t.request(check.method, check.path, { key, body: check.body });
        expect({ body: check.body, status: res.status, code: res.body?.code }).toEqual({ body: check.body, status: 400, code: 'validation_error' });
        const paths = detailPaths(res);
        for (const p of check.expected) expect(paths).toContain(p);
        expectErrorBody(res, ['details']);
      }
      expect(await snapshot()).toEqual(before);
    });

    it('answers a JSON error, not a crash, for a write with no body at all', async () => {
      const res = await t.request('POST', txnPath, { key: biz.private_key });
      expect(res.status).toBe(400);
      expect(['validation_error', 'invalid_json']).toContain(res.body.code);
      expectErrorBody(res, ['details']);
    });

    it('refuses a query parameter out of range with 400 naming it', async () => {
      const res = await t.request('GET', '/api/v1/customers?limit=0', { key: biz.private_key });
      expect(res.status).toBe(400);
      expect(res.body.code).toBe('validation_error');
      expect(detailPaths(res).some((p) => p.includes('limit'))).toBe(true);
      const tooMany = await t.request('GET', '/api/v1/customers?limit=201', { key: biz.private_key });
      expect(tooMany.status).toBe(400);
    });
  });

  describe('routes', () => {
    it('answers 404 not_found for unknown routes, inside and outside /api/v1', async () => {
      for (const path of ['/api/v1/rewardz', '/api/v1/customers/x/y/z', '/static/app.js', '/api']) {
        const res = await t.request('GET', path, { key: biz.private_key });
        expect({ path, status: res.status, code: res.body?.code }).toEqual({ path, status: 404, code: 'not_found' });
        expectErrorBody(res);
      }
    });

    it('answers 405 method_not_allowed with an Allow header for a known path and a wrong method', async () => {
      const key = biz.private_key;
      const checks = [
        { method: 'PUT', path: '/api/v1/customers', allow: ['GET', 'POST'] },
        { method: 'DELETE', path: `/api/v1/customers/${customerId}`, allow: ['GET', 'PATCH'] },
        { method: 'GET', path: txnPath, allow: ['POST'] },
        { method: 'PATCH', path: '/api/v1/keys', allow: ['GET', 'POST'] },
        { method: 'POST', path: `/api/v1/customers/${customerId}/summary`, allow: ['GET'] },
      ];
      for (const check of checks) {
        const res = await t.request(check.method, check.path, { key, body: check.method === 'GET' ? undefined : {} });
        expect({ ...check, status: res.status, code: res.body?.code }).toEqual({ ...check, status: 405, code: 'method_not_allowed' });
        const allow = (res.headers.get('allow') ?? '').split(',').map((m) => m.trim()).filter(Boolean);
        expect(allow.sort()).toEqual(check.allow);
        expectErrorBody(res);
      }
    });
  });
});

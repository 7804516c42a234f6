import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError } from '../support/expectations.js';
import { fillPath, type SeededBusiness, seedBusiness, servedApiRoutes } from '../support/seeded-business.js';
import { startTestApp, type TestApp } from '../support/test-app.js';

/** CONTRACT.md §3 as amended: hostile input is refused with 400 before it reaches a store, on every route. */
describe('hostile input and request shape', () => {
  let t: TestApp;
  let b: SeededBusiness;
  let routes: string[];
  let n = 0;
  const split = (route: string) => {
    const [method, path] = route.split(' ') as [string, string];
    return { method, path };
  };
  const json = { 'content-type': 'application/json' };

  const balance = async (id: string) => (await t.request('GET', `/api/v1/customers/${id}`, { key: b.private_key })).body.points_balance;
  const earn = (id: string, rawBody: string, headers: Record<string, string> = json) =>
    t.request('POST', `/api/v1/customers/${id}/points/transaction`, { key: b.private_key, headers, rawBody });

  beforeAll(async () => {
    t = await startTestApp({ config: { webhookAllowPrivate: true }, runDispatcher: false });
    b = await seedBusiness(t, 'hostile');
    routes = servedApiRoutes(t);
  });
  afterAll(() => t.close());

  describe('NUL and unpaired surrogates', () => {
    it('refuses a NUL in any path id of every route with 400 validation_error', async () => {
      const withIds = routes.filter((r) => r.includes(':'));
      expect(withIds.length).toBeGreaterThan(20);
      for (const route of withIds) {
        const { method, path } = split(route);
        const target = await t.request(method, fillPath(path, { ...b.ids, [firstParam(path)]: 'abc\0def' }), { key: b.private_key });
        expect(target.status, `${route}: ${target.text}`).toBe(400);
        expect(target.body.code).toBe('validation_error');
        expect(target.body.details[0]).toEqual({ path: 'path', message: expect.stringContaining('NUL') });
      }
    });

    it('refuses a NUL in a filter and in a cursor of every list', async () => {
      const lists = routes.filter((r) => r.startsWith('GET ') && !/:[a-z_]+$/.test(split(r).path));
      for (const route of lists) {
        const path = fillPath(split(route).path, b.ids);
        const response = await t.request('GET', `${path}?starting_after=cust_a%00b`, { key: b.private_key });
        expect(response.status, `${route}: ${response.text}`).toBe(400);
        expect(response.body.details).toEqual([{ path: 'query.starting_after', message: expect.stringContaining('NUL') }]);
      }
      expectError(await t.request('GET', '/api/v1/customers?email=a%00b%40example.com', { key: b.private_key }), 400, 'validation_error');
      expectError(await t.request('GET', '/api/v1/events?event_type=x%00', { key: b.private_key }), 400, 'validation_error');
    });

    it('refuses an unpaired surrogate in any string or key of any write body, naming where', async () => {
      const writes = routes.filter((r) => !r.startsWith('GET '));
      for (const route of writes) {
        const { method, path } = split(route);
        const response = await t.request(method, fillPath(path, b.ids), { key: b.private_key, headers: json, rawBody: '{"email":"a@b.com","first_name":"\\ud800"}' });
        expect(response.status, `${route}: ${response.text}`).toBe(400);
        expect(response.body.details, route).toEqual([{ path: 'first_name', message: expect.stringContaining('surrogate') }]);
      }
      const nested = await t.request('POST', '/api/v1/customers', { key: b.private_key, headers: json, rawBody: '{"email":"s@example.com","metadata":{"a":["ok","\\udc00x"]}}' });
      expect(nested.body.details).toEqual([{ path: 'metadata.a.1', message: expect.stringContaining('surrogate') }]);
      const key = await t.request('POST', '/api/v1/customers', { key: b.private_key, headers: json, rawBody: '{"email":"s@example.com","metadata":{"\\ud83d":1}}' });
      expectError(key, 400, 'validation_error');
      const pair = await t.request('POST', '/api/v1/customers', { key: b.private_key, headers: json, rawBody: '{"email":"pair@example.com","first_name":"\\ud83d\\ude00"}' });
      expect(pair.status, pair.text).toBe(201);
      expect(pair.body.first_name).toBe('😀');
    });

    it('keeps valid concurrent writes to a customer whole when a hostile one is among them', async () => {
      const id = await t.newCustomer(b.private_key);
      const answers = await Promise.all([
        ...Array.from({ length: 30 }, (_, i) => earn(id, JSON.stringify({ type: 'earn', amount: 1, reference: `ok-${i}` }))),
        earn(id, '{"type":"earn","amount":1,"description":"\\ud800"}'),
      ]);
      expect(answers.map((a) => a.status).sort()).toEqual([...Array(30).fill(201), 400]);
      expect(await balance(id)).toBe(30);
    });
  });

  describe('strict JSON', () => {
    /** A body `depth` objects deep: the body itself, then `depth - 1` nested in its metadata. */
    const nestedMetadata = (depth: number) => `{"email":"deep-${++n}@example.com","metadata":${'{"a":'.repeat(depth - 1)}1${'}'.repeat(depth - 1)}}`;

    it('accepts 32 levels of nesting and refuses 33, 2,300 and 10,000 with invalid_json', async () => {
      const ok = await t.request('POST', '/api/v1/customers', { key: b.private_key, headers: json, rawBody: nestedMetadata(32) });
      expect(ok.status, ok.text).toBe(201);
      for (const depth of [33, 2300]) {
        const res = await t.request('POST', '/api/v1/customers', { key: b.private_key, headers: json, rawBody: nestedMetadata(depth) });
        expectError(res, 400, 'invalid_json');
        expect(res.body.message).toContain('32');
      }
      const deepest = `${'['.repeat(10_000)}${']'.repeat(10_000)}`;
      expectError(await t.request('POST', '/api/v1/customers', { key: b.private_key, headers: json, rawBody: deepest }), 400, 'invalid_json');
    });

    it('refuses duplicate keys in any object, and applies nothing', async () => {
      const id = await t.newCustomer(b.private_key);
      await earn(id, '{"type":"earn","amount":10}');
      for (const body of [
        '{"type":"deduct","type":"earn","amount":5}',
        '{"type":"earn","\\u0074ype":"deduct","amount":5}',
        '{"type":"earn","amount":5,"metadata":{"a":1,"b":{"c":1,"c":2}}}',
      ]) {
        const res = await earn(id, body);
        expectError(res, 400, 'invalid_json');
        expect(res.body.message).toContain('duplicate key');
      }
      expect(await balance(id)).toBe(10);
      // the same key in sibling objects is not a duplicate
      expect((await earn(id, '{"type":"earn","amount":1,"metadata":{"a":{"k":1},"b":{"k":1}}}')).status).toBe(201);
    });

    it('parses only application/json, optionally with charset=utf-8', async () => {
      const id = await t.newCustomer(b.private_key);
      const body = '{"type":"earn","amount":1}';
      for (const type of ['application/json; charset=utf-16', 'application/evil+json', 'text/json', 'application/jsonx']) {
        expectError(await earn(id, body, { 'content-type': type }), 415, 'unsupported_media_type');
      }
      for (const type of ['application/json', 'application/json; charset=utf-8', 'Application/JSON;charset="UTF-8"']) {
        expect((await earn(id, body, { 'content-type': type })).status, type).toBe(201);
      }
      expect(await balance(id)).toBe(3);
    });

    it('takes limit only in decimal digits', async () => {
      for (const limit of ['0x10', '1e1', '+5', ' 5', '5.0', '']) {
        expectError(await t.request('GET', `/api/v1/customers?limit=${encodeURIComponent(limit)}`, { key: b.private_key }), 400, 'validation_error');
      }
      expect((await t.request('GET', '/api/v1/customers?limit=16', { key: b.private_key })).status).toBe(200);
    });
  });

  describe('the shape a route declares', () => {
    it('names the same resource with a trailing slash (never 405)', async () => {
      for (const path of ['/api/v1/customers', '/api/v1/tiers', `/api/v1/customers/${b.ids.customer_id}`]) {
        const plain = await t.request('GET', path, { key: b.private_key });
        const slashed = await t.request('GET', `${path}/`, { key: b.private_key });
        expect(slashed.status, `${path}/`).toBe(200);
        expect(slashed.body).toEqual(plain.body);
      }
      for (const path of ['/docs/', '/healthz/']) expect((await t.request('GET', path)).status, path).toBe(200);
      const created = await t.request('POST', '/api/v1/customers/', { key: b.private_key, body: { email: `slash-${++n}@example.com` } });
      expect(created.status).toBe(201);
    });

    it('refuses unknown query parameters on every route, and records nothing', async () => {
      for (const route of routes) {
        const { method, path } = split(route);
        const response = await t.request(method, `${fillPath(path, b.ids)}?dry_run=1`, { key: b.private_key, ...(method === 'GET' || method === 'DELETE' ? {} : { body: {} }) });
        expect(response.status, `${route}: ${response.text}`).toBe(400);
        expect(response.body.details, route).toContainEqual({ path: 'query.dry_run', message: expect.any(String) });
      }
      const id = await t.newCustomer(b.private_key);
      const res = await t.request('POST', `/api/v1/customers/${id}/points/transaction?dry_run=1`, { key: b.private_key, body: { type: 'earn', amount: 5 } });
      expectError(res, 400, 'validation_error');
      expect(await balance(id)).toBe(0);
    });

    it('refuses a body on routes that take none, and accepts none, an empty one or {}', async () => {
      const document = (await t.request('GET', '/api/v1/openapi.json')).body;
      const bodyless = Object.entries(document.paths as Record<string, Record<string, { requestBody?: unknown }>>).flatMap(([path, ops]) =>
        Object.entries(ops)
          .filter(([method, op]) => ['post', 'patch', 'delete'].includes(method) && !op.requestBody)
          .map(([method]) => `${method.toUpperCase()} ${path.replace(/\{([a-z_]+)\}/g, ':$1')}`),
      );
      expect(bodyless.sort()).toEqual([
        'DELETE /api/v1/keys/:key_id',
        'DELETE /api/v1/webhooks/:webhook_id',
        'POST /api/v1/customers/:customer_id/redemptions/:redemption_id/cancel',
        'POST /api/v1/webhooks/:webhook_id/rotate-secret',
        'POST /api/v1/webhooks/:webhook_id/test',
      ]);
      const before = (await t.request('GET', `/api/v1/customers/${b.ids.customer_id}/redemptions`, { key: b.private_key })).body;
      for (const route of bodyless) {
        const { method, path } = split(route);
        for (const body of [{ unknown_field: 1 }, [], 'x', null]) {
          const res = await t.request(method, fillPath(path, b.ids), { key: b.private_key, body });
          expect(res.status, `${route} ${JSON.stringify(body)}: ${res.text}`).toBe(400);
          expect(res.body.code).toBe('validation_error');
        }
      }
      expect((await t.request('GET', `/api/v1/customers/${b.ids.customer_id}/redemptions`, { key: b.private_key })).body).toEqual(before);
      const rotate = `/api/v1/webhooks/${b.ids.webhook_id}/rotate-secret`;
      expect((await t.request('POST', rotate, { key: b.private_key })).status).toBe(200);
      expect((await t.request('POST', rotate, { key: b.private_key, headers: json, rawBody: '' })).status).toBe(200);
      expect((await t.request('POST', rotate, { key: b.private_key, body: {} })).status).toBe(200);
      const cancel = `/api/v1/customers/${b.ids.customer_id}/redemptions/${b.ids.redemption_id}/cancel`;
      expect((await t.request('POST', cancel, { key: b.private_key, body: {} })).status).toBe(200);
    });
  });

  describe('keys in browsers', () => {
    it('lets a public key look a customer up by an exact filter, never list them', async () => {
      const customer = (await t.request('GET', `/api/v1/customers/${b.ids.customer_id}`, { key: b.public_key })).body;
      expect(customer.id).toBe(b.ids.customer_id);
      const refused = await t.request('GET', '/api/v1/customers', { key: b.public_key });
      expectError(refused, 403, 'public_key_not_allowed');
      expectError(await t.request('GET', '/api/v1/customers?tier=tier_x', { key: b.public_key }), 403, 'public_key_not_allowed');
      const found = await t.request('GET', `/api/v1/customers?email=${encodeURIComponent(customer.email)}`, { key: b.public_key });
      expect(found.body.map((c: { id: string }) => c.id)).toEqual([customer.id]);
    });

    it('lets a browser read why a public-looking key was refused (CORS on 401 and 403)', async () => {
      const origin = { Origin: 'https://shop.example' };
      const unknown = await t.request('GET', '/api/v1/tiers', { key: `pk_live_${'x'.repeat(32)}`, headers: origin });
      expectError(unknown, 401, 'invalid_api_key');
      expect(unknown.headers.get('access-control-allow-origin')).toBe('*');
      const bearer = await t.request('GET', '/api/v1/tiers', { headers: { ...origin, Authorization: `Bearer pk_live_${'y'.repeat(32)}` } });
      expect(bearer.headers.get('access-control-allow-origin')).toBe('*');
      const write = await t.request('POST', '/api/v1/customers', { key: b.public_key, headers: origin, body: { email: 'x@example.com' } });
      expectError(write, 403, 'public_key_not_allowed');
      expect(write.headers.get('access-control-allow-origin')).toBe('*');
      const privateRefused = await t.request('GET', '/api/v1/tiers', { key: `sk_live_${'x'.repeat(32)}`, headers: origin });
      expect(privateRefused.headers.get('access-control-allow-origin')).toBeNull();
    });

    it('treats an empty X-API-Key or a bare Bearer as a missing key', async () => {
      expectError(await t.request('GET', '/api/v1/tiers', { headers: { 'X-API-Key': '' } }), 401, 'missing_api_key');
      expectError(await t.request('GET', '/api/v1/tiers', { headers: { 'X-API-Key': '  ' } }), 401, 'missing_api_key');
      expectError(await t.request('GET', '/api/v1/tiers', { headers: { Authorization: 'Bearer' } }), 401, 'missing_api_key');
      expectError(await t.request('GET', '/api/v1/tiers', { headers: { Authorization: 'Basic abc' } }), 401, 'invalid_api_key');
    });
  });
});

function firstParam(path: string): string {
  return /:([a-z_]+)/.exec(path)![1]!;
}

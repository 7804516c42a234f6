import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/test-app.js';

interface LogLine {
  msg: string;
  request_id?: string;
  method?: string;
  route?: string | null;
  path?: string;
  status?: number;
  duration_ms?: number;
  business_id?: string | null;
  key_id?: string | null;
}

describe('request logs', () => {
  let t: TestApp;
  let output = '';
  const lines = () => output.trim().split('\n').map((line) => JSON.parse(line) as LogLine);
  const requestLine = (requestId: string | null) => {
    const found = lines().filter((l) => l.msg === 'request' && l.request_id === requestId);
    expect(found).toHaveLength(1);
    return found[0]!;
  };

  beforeAll(async () => {
    const logger = pino({ level: 'info' }, { write: (chunk: string) => void (output += chunk) });
    // Private webhook targets allowed: the endpoint below is never called (no dispatcher), only created.
    t = await startTestApp({ logger, runDispatcher: false, config: { webhookAllowPrivate: true } });
  });
  afterAll(() => t.close());

  it('writes one JSON line per request with its id, route, status, duration, business and key ids, and never the key', async () => {
    const { business_id, private_key: key } = await t.business();
    const created = await t.request('POST', '/api/v1/customers', { key, body: { email: 'log@example.com' } });
    expect(created.status).toBe(201);
    const got = await t.request('GET', `/api/v1/customers/${created.body.id}`, {
      headers: { authorization: `Bearer ${key}`, 'x-request-id': 'req-from-client-1' },
    });
    expect(got.status).toBe(200);
    const missing = await t.request('GET', '/api/v1/customers/cust_missing', { key });
    expect(missing.status).toBe(404);
    const keys = await t.request('GET', '/api/v1/keys', { key });
    const keyId = (keys.body as Array<{ id: string; type: string }>).find((k) => k.type === 'private')!.id;

    expect(requestLine(created.headers.get('x-request-id'))).toMatchObject({
      method: 'POST',
      route: '/api/v1/customers',
      path: '/api/v1/customers',
      status: 201,
      business_id,
      key_id: keyId,
      duration_ms: expect.any(Number),
    });
    expect(requestLine('req-from-client-1')).toMatchObject({
      method: 'GET',
      route: '/api/v1/customers/:customer_id',
      path: `/api/v1/customers/${created.body.id}`,
      status: 200,
      business_id,
      key_id: keyId,
    });
    expect(requestLine(missing.headers.get('x-request-id'))).toMatchObject({ status: 404, key_id: keyId });
    expect(output).not.toContain(key);
    expect(output).not.toContain(key.slice(-12));
  });

  it('logs a 401 for a wrong or malformed key with its request id, without the key in either header', async () => {
    const { private_key: real } = await t.business();
    // Well-formed but unknown, and malformed: both refused before any principal exists.
    const unknown = `${real.slice(0, -6)}zzzzzz`;
    const malformed = 'not-a-key-but-a-secret-nonetheless';
    const responses = [
      await t.request('GET', '/api/v1/customers', { key: unknown }),
      await t.request('GET', '/api/v1/customers', { headers: { authorization: `Bearer ${malformed}` } }),
      await t.request('GET', '/api/v1/customers', { key: real, headers: { authorization: `Bearer ${unknown}` } }),
    ];
    expect(responses.map((r) => r.status)).toEqual([401, 401, 401]);
    for (const response of responses) {
      const requestId = response.headers.get('x-request-id');
      expect(requestId).toMatch(/^req_/);
      expect(requestLine(requestId)).toMatchObject({ status: 401, path: '/api/v1/customers', business_id: null, key_id: null });
    }
    for (const secret of [unknown, malformed, real]) expect(output).not.toContain(secret);
  });

  it('never logs a webhook signing secret', async () => {
    const { private_key: key } = await t.business();
    const created = await t.request('POST', '/api/v1/webhooks', {
      key,
      body: { url: 'http://127.0.0.1:9/loyalty', events: ['points.earned'] },
    });
    expect(created.status).toBe(201);
    const rotated = await t.request('POST', `/api/v1/webhooks/${created.body.id}/rotate-secret`, { key });
    expect(rotated.status).toBe(200);
    expect(requestLine(rotated.headers.get('x-request-id'))).toMatchObject({ route: '/api/v1/webhooks/:webhook_id/rotate-secret', status: 200 });
    for (const secret of [created.body.secret, rotated.body.secret]) {
      expect(secret).toMatch(/^whsec_/);
      expect(output).not.toContain(secret);
      expect(output).not.toContain(secret.slice('whsec_'.length));
    }
  });
});

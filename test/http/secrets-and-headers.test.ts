import type { AddressInfo } from 'node:net';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHttpServer } from '../../src/http/http-server.js';
import { startTestApp, type TestApp, type TestResponse } from '../support/test-app.js';

describe('secrets and security headers', () => {
  let t: TestApp;
  let logs = '';

  beforeAll(async () => {
    const logger = pino({ level: 'trace' }, { write: (chunk: string) => void (logs += chunk) });
    t = await startTestApp({ logger, runDispatcher: false, config: { webhookAllowPrivate: true, rateLimitRps: 1, rateLimitBurst: 50 } });
  });
  afterAll(() => t.close());

  it('never shows API keys or webhook secrets in logs, errors or lists, only where they are created', async () => {
    const biz = await t.business();
    const key = biz.private_key;
    const created = await t.request('POST', '/api/v1/keys', { key, body: { type: 'private', name: 'ci', permissions: ['customers:read'] } });
    const webhook = await t.request('POST', '/api/v1/webhooks', { key, body: { url: 'http://127.0.0.1:9/hook', events: ['*'] } });
    const rotated = await t.request('POST', `/api/v1/webhooks/${webhook.body.id}/rotate-secret`, { key });
    const revoked = await t.request('DELETE', `/api/v1/keys/${created.body.id}`, { key });
    expect([created.status, webhook.status, rotated.status, revoked.status]).toEqual([201, 201, 200, 200]);
    const secrets = [key, biz.public_key, created.body.key, webhook.body.secret, rotated.body.secret].filter(Boolean) as string[];
    expect(secrets.length).toBe(5);

    const answers: TestResponse[] = [
      // errors, some carrying a secret in a header or a body value (a path or a field name is
      // echoed back to its own sender in 404 and validation messages, and paths are logged:
      // keys belong in headers only)
      await t.request('GET', '/api/v1/customers', { key: created.body.key }), // revoked: 401
      await t.request('GET', '/api/v1/customers', { headers: { 'x-api-key': key, authorization: `Bearer ${biz.public_key}` } }),
      await t.request('POST', '/api/v1/customers', { key, body: { email: key, phone: webhook.body.secret } }),
      await t.request('POST', '/api/v1/keys', { key: biz.public_key, body: { type: 'private' } }),
      await t.request('PATCH', `/api/v1/webhooks/${webhook.body.id}`, { key, body: { secret: webhook.body.secret } }),
      await t.request('POST', '/api/v1/customers', { key, rawBody: `{"email": "${key}"`, headers: { 'content-type': 'application/json' } }),
      await t.request('GET', `/api/v1/customers/${key}`, { key }), // a key put in a path: 404 naming the id
      await t.request('GET', `/api/v1/${biz.public_key}`, { key }), // no such route
      await t.request('GET', `/api/v1/webhooks/${webhook.body.secret}/deliveries`, { key }),
      // lists and reads
      await t.request('GET', '/api/v1/keys', { key }),
      await t.request('GET', '/api/v1/webhooks', { key }),
      await t.request('GET', `/api/v1/webhooks/${webhook.body.id}`, { key }),
      await t.request('GET', `/api/v1/webhooks/${webhook.body.id}/deliveries`, { key }),
      await t.request('GET', '/metrics'),
    ];
    expect(answers.slice(0, 9).every((a) => a.status >= 400)).toBe(true);
    for (const answer of answers) {
      for (const secret of secrets) {
        const bare = secret.replace(/^(sk_live_|pk_live_|whsec_)/, '');
        expect(answer.text, answer.text).not.toContain(bare);
        expect([...answer.headers.values()].join(' ')).not.toContain(bare);
      }
    }
    expect(logs.length).toBeGreaterThan(0);
    for (const secret of secrets) expect(logs).not.toContain(secret.replace(/^(sk_live_|pk_live_|whsec_)/, ''));
  });

  /** The same kinds of answer, asked through `send`: in process (`app.request`), or over a real socket. */
  const everyKindOfAnswer = async (send: TestApp['request']) => {
    const { private_key: key, public_key: pub } = await t.business();
    const answers = [
      await send('GET', '/api/v1/customers', { key }),
      await send('POST', '/api/v1/customers', { key, body: { email: 'h@example.com' } }),
      await send('GET', '/api/v1/tiers', { key: pub }),
      await send('GET', '/api/v1/customers'),
      await send('GET', '/api/v1/customers/cust_nope', { key }),
      await send('GET', '/nowhere'),
      await send('PUT', '/api/v1/customers', { key }),
      await send('POST', '/api/v1/customers', { key, rawBody: '{', headers: { 'content-type': 'application/json' } }),
      await send('OPTIONS', '/api/v1/customers', { headers: { origin: 'https://shop.example', 'access-control-request-method': 'GET' } }),
      await send('GET', '/healthz'),
      await send('GET', '/api/v1/openapi.json'),
      await send('GET', '/docs'),
    ];
    // and a 429: the bucket here holds 50
    const burst = await Promise.all(Array.from({ length: 60 }, () => send('GET', '/api/v1/tiers', { key })));
    answers.push(burst.find((r) => r.status === 429)!);
    expect(answers.map((a) => a.status)).toEqual([200, 201, 200, 401, 404, 404, 405, 400, 204, 200, 200, 200, 429]);
    for (const answer of answers) {
      const where = `${answer.status} ${answer.text.slice(0, 100)}`;
      expect(answer.headers.get('x-content-type-options'), where).toBe('nosniff');
      expect(answer.headers.get('x-frame-options'), where).toBe('SAMEORIGIN');
      expect(answer.headers.get('strict-transport-security'), where).toMatch(/max-age=\d+/);
      expect(answer.headers.get('referrer-policy'), where).toBe('no-referrer');
      expect(answer.headers.get('cross-origin-opener-policy'), where).toBe('same-origin');
      expect(answer.headers.get('cross-origin-resource-policy'), where).toBeNull();
      expect(answer.headers.get('x-request-id'), where).toBeTruthy();
      expect(answer.headers.get('x-powered-by'), where).toBeNull();
    }
    // an answer's own headers go beside them
    expect(answers[11]!.headers.get('content-type')).toMatch(/^text\/html/);
    // the bucket's state on every authenticated answer, refusals included
    for (const answer of [answers[0]!, answers[1]!, answers[4]!, answers[12]!]) expect(answer.headers.get('ratelimit'), answer.text).toMatch(/^"api-key";r=\d+;t=\d+$/);
    expect(answers[12]!.headers.get('retry-after')).toMatch(/^\d+$/);
    // CORS on answers to public keys only, refusals included
    const refusedPublic = await send('GET', '/api/v1/customers', { key: pub });
    expect(refusedPublic.status).toBe(403);
    for (const answer of [answers[2]!, refusedPublic]) {
      expect(answer.headers.get('access-control-allow-origin'), answer.text).toBe('*');
      expect(answer.headers.get('access-control-expose-headers')).toContain('RateLimit');
    }
    expect(answers[0]!.headers.get('access-control-allow-origin')).toBeNull();
    // a client's own request id is kept when plain, replaced when not
    const plain = await send('GET', '/healthz', { headers: { 'x-request-id': 'client-trace-42' } });
    expect(plain.headers.get('x-request-id')).toBe('client-trace-42');
    for (const sent of ['two words', 'x'.repeat(256), '']) {
      const replaced = await send('GET', '/healthz', { headers: { 'x-request-id': sent } });
      expect(replaced.headers.get('x-request-id'), sent).toMatch(/^req_/);
    }
  };

  it('sends the standard security headers on every kind of response', async () => {
    await everyKindOfAnswer((method, path, options) => t.request(method, path, options));
  });

  // The same answers through the HTTP server `serve` runs (the node adapter writes the headers), over a socket.
  it('sends them through the HTTP server too', async () => {
    const server = createHttpServer(t.app.fetch);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    try {
      await everyKindOfAnswer(async (method, path, options = {}) => {
        const headers: Record<string, string> = { ...options.headers };
        if (options.key !== undefined) headers['x-api-key'] = options.key;
        let body = options.rawBody;
        if (options.body !== undefined) {
          body = JSON.stringify(options.body);
          headers['content-type'] ??= 'application/json';
        }
        const response = await fetch(`http://127.0.0.1:${port}${path}`, { method, headers, ...(body === undefined ? {} : { body }) });
        const text = await response.text();
        return { status: response.status, headers: response.headers, body: undefined, text };
      });
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { openDatabase } from '../../src/db/database.js';
import { createApp } from '../../src/http/app.js';
import { createServices } from '../../src/services.js';
import { startTestApp, type TestApp, type TestResponse } from '../support/test-app.js';
import { STORE_KIND } from '../support/test-database.js';

// 10 tokens a second, at most 5 at once: one token every 100 ms of the injected clock. Public
// keys: 20 a second, at most 8 at once.
const limits = { rateLimitRps: 10, rateLimitBurst: 5, publicRateLimitRps: 20, publicRateLimitBurst: 8 };

describe('rate limiting per API key', () => {
  let t: TestApp;
  let nowMs = Date.parse('2026-01-01T00:00:00.000Z');
  const clock = { now: () => new Date(nowMs) };
  const get = (key: string) => t.request('GET', '/api/v1/tiers', { key });
  const burst = (key: string, n: number) => Promise.all(Array.from({ length: n }, () => get(key)));
  const statuses = (responses: TestResponse[]) => responses.map((r) => r.status).sort();

  beforeAll(async () => {
    t = await startTestApp({ config: limits, clock });
  });
  afterAll(() => t.close());

  it('lets a burst through with RateLimit headers, then answers 429 rate_limited with Retry-After', async () => {
    const { private_key: key } = await t.business();
    const allowed = await burst(key, 5);
    expect(statuses(allowed)).toEqual([200, 200, 200, 200, 200]);
    for (const response of allowed) {
      expect(response.headers.get('ratelimit-policy')).toBe('"api-key";q=5;w=1');
      expect(response.headers.get('ratelimit')).toMatch(/^"api-key";r=[0-4];t=1$/);
    }
    expect(allowed.map((r) => r.headers.get('ratelimit')).sort()).toEqual([0, 1, 2, 3, 4].map((r) => `"api-key";r=${r};t=1`));

    const refused = await get(key);
    expect(refused.status).toBe(429);
    expect(refused.body).toEqual({ code: 'rate_limited', message: expect.any(String), request_id: expect.stringMatching(/^req_/) });
    expect(refused.headers.get('retry-after')).toBe('1');
    expect(refused.headers.get('ratelimit')).toBe('"api-key";r=0;t=1');
    expect(refused.headers.get('ratelimit-policy')).toBe('"api-key";q=5;w=1');
    expect(refused.headers.get('x-request-id')).toMatch(/^req_/);
  });

  it('refills with time: one token per 1/rps seconds, never beyond the burst', async () => {
    const { private_key: key } = await t.business();
    expect(statuses(await burst(key, 6))).toEqual([200, 200, 200, 200, 200, 429]);

    nowMs += 250; // 2.5 tokens
    expect(statuses(await burst(key, 3))).toEqual([200, 200, 429]);
    nowMs += 50; // 0.5 left + 0.5 = 1 token
    expect((await get(key)).status).toBe(200);

    nowMs += 60_000; // a long quiet spell fills the bucket to the burst, not beyond
    expect(statuses(await burst(key, 7))).toEqual([200, 200, 200, 200, 200, 429, 429]);
  });

  it('keeps a bucket per key: an exhausted key does not slow other keys, of its business or another', async () => {
    const a = await t.business();
    const b = await t.business();
    expect(statuses(await burst(a.private_key, 6))).toContain(429);
    expect(statuses(await burst(a.public_key, 8))).toEqual(Array(8).fill(200));
    expect(statuses(await burst(b.private_key, 5))).toEqual([200, 200, 200, 200, 200]);
    const refused = await get(a.public_key);
    expect(refused.status).toBe(429);
    // a public key has its own limit (LOYALTY_PUBLIC_RATE_LIMIT_RPS / _BURST), named in the headers
    expect(refused.headers.get('ratelimit-policy')).toBe('"public-key";q=8;w=1');
    // Public keys are for browsers: they can read the rate limit headers.
    expect(refused.headers.get('access-control-expose-headers')).toContain('RateLimit');
  });

  it('counts only authenticated requests: a missing or wrong key is 401 and spends nothing', async () => {
    const { private_key: key } = await t.business();
    for (let i = 0; i < 10; i++) expect((await t.request('GET', '/api/v1/customers')).status).toBe(401);
    expect(statuses(await burst(key, 5))).toEqual([200, 200, 200, 200, 200]);
  });

  it.skipIf(STORE_KIND !== 'postgres')(
    'shares one bucket between two app instances on one database (server mode only: embedded buckets live in the one process)',
    async () => {
      const url = (t.services.database as { url?: string }).url!;
      const second = await createServices({
        config: { ...loadConfig({}), logLevel: 'silent', ...limits },
        database: await openDatabase({ databaseUrl: url, poolSize: 5 }),
        logger: pino({ level: 'silent' }),
      });
      try {
        const secondApp = createApp(second, { clock });
        const viaSecond = async (key: string) => (await secondApp.request('/api/v1/customers', { headers: { 'x-api-key': key } })).status;
        const { private_key: key } = await t.business();
        const mixed = await Promise.all(Array.from({ length: 8 }, (_, i) => (i % 2 ? viaSecond(key) : get(key).then((r) => r.status))));
        expect(mixed.sort()).toEqual([200, 200, 200, 200, 200, 429, 429, 429]);
        nowMs += 100;
        expect(await viaSecond(key)).toBe(200);
        expect((await get(key)).status).toBe(429);
      } finally {
        await second.close();
      }
    },
  );
});

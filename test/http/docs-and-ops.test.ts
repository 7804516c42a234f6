import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/test-app.js';

describe('API documentation and operations endpoints', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  it('serves an OpenAPI 3.1 document, without a key, that lists every API route the app serves', async () => {
    const res = await t.request('GET', '/api/v1/openapi.json');
    expect(res.status).toBe(200);
    expect(res.body.openapi).toBe('3.1.0');
    const documented = new Set(
      Object.entries(res.body.paths as Record<string, Record<string, unknown>>).flatMap(([path, ops]) =>
        Object.keys(ops).map((method) => `${method.toUpperCase()} ${path}`.replace(/\{([^}]+)\}/g, ':$1')),
      ),
    );
    const served = new Set(
      t.app.routes
        .filter((r) => r.path.startsWith('/api/v1/') && r.method !== 'ALL' && !r.path.includes('*') && r.path !== '/api/v1/openapi.json')
        .map((r) => `${r.method} ${r.path}`),
    );
    expect(served.size).toBeGreaterThan(30);
    expect([...served].filter((r) => !documented.has(r))).toEqual([]);
    expect([...documented].filter((r) => !served.has(r))).toEqual([]);
  });

  it('names the origin each request reached as its server (the document is built once)', async () => {
    const fetched = async (origin: string) => {
      const res = await t.app.request(`${origin}/api/v1/openapi.json`);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      return (await res.json()) as { servers: Array<{ url: string }>; paths: unknown };
    };
    const [one, two] = [await fetched('http://shop.example:3000'), await fetched('https://api.loyalty.example')];
    expect(one.servers).toEqual([{ url: 'http://shop.example:3000', description: 'This service' }]);
    expect(two.servers).toEqual([{ url: 'https://api.loyalty.example', description: 'This service' }]);
    expect(two.paths).toEqual(one.paths);
  });

  it('documents the error responses and the key schemes', async () => {
    const doc = (await t.request('GET', '/api/v1/openapi.json')).body;
    const createCustomer = doc.paths['/api/v1/customers'].post;
    expect(Object.keys(createCustomer.responses)).toEqual(expect.arrayContaining(['201', '400', '401', '403', '409']));
    expect(createCustomer.requestBody.content['application/json'].schema).toBeDefined();
    expect(Object.keys(doc.components.securitySchemes)).toEqual(expect.arrayContaining(['ApiKeyHeader', 'BearerKey']));
  });

  it('serves a reference page whose assets are all local', async () => {
    const page = await t.app.request('/docs');
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain('/api/v1/openapi.json');
    const urls = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
    expect(urls.every((u) => u.startsWith('/'))).toBe(true);
    for (const url of urls) {
      const asset = await t.app.request(url);
      expect(asset.status, url).toBe(200);
      expect((await asset.arrayBuffer()).byteLength).toBeGreaterThan(100);
    }
  });

  it('answers /healthz and /readyz with the projections and their lag', async () => {
    // This process runs the workers too: their loops are part of its health (test/ops/workers-health.test.ts).
    expect((await t.request('GET', '/healthz')).body).toMatchObject({ status: 'ok', workers: { projections: { state: 'running' }, webhooks: { state: 'running' } } });
    const ready = await t.request('GET', '/readyz');
    expect(ready.status).toBe(200);
    expect(ready.body.status).toBe('ready');
    expect(ready.body.projections.map((p: { name: string }) => p.name)).toEqual(['access', 'customers', 'catalog', 'daily-points', 'webhooks', 'due-work']);
    for (const p of ready.body.projections) expect(p.lag).toBe(0);
  });

  it('exposes Prometheus metrics: request latency by route pattern and status, projection lag and events, webhook queue depth', async () => {
    const { private_key: key } = await t.business();
    const customer = await t.request('POST', '/api/v1/customers', { key, body: { email: 'metrics@example.com' } });
    await t.request('GET', `/api/v1/customers/${customer.body.id}`, { key });
    const res = await t.app.request('/metrics');
    expect(res.headers.get('content-type')).toContain('text/plain');
    const text = await res.text();
    expect(text).toMatch(/loyalty_http_request_duration_seconds_count\{method="GET",route="\/api\/v1\/customers\/:customer_id",status="200"\} 1/);
    expect(text).toMatch(/loyalty_http_request_duration_seconds_count\{method="POST",route="\/api\/v1\/customers",status="201"\} 1/);
    expect(text).toMatch(/loyalty_projection_lag_events\{projection="customers"\} 0/);
    expect(text).toMatch(/loyalty_projection_events_total\{projection="customers"\} [1-9]/);
    expect(text).toMatch(/loyalty_webhook_queue_depth 0/);
    expect(text).not.toContain(key);
  });
});

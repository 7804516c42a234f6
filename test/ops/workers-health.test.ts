import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { instanceBeside } from '../support/instance-beside.js';
import { startReceiver } from '../support/webhook-receiver.js';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { api, exitWithin, freshStore, killAllProcesses, type ProcessStore, SERVER_MODE, startServer } from '../e2e/process-helpers.js';

describe('/healthz of a process that runs the workers', () => {
  let t: TestApp;
  /** How far the dispatcher's clock is ahead of the wall clock. */
  let ahead = 0;
  let release: () => void = () => {};
  const held = new Promise<void>((resolve) => (release = resolve));

  beforeAll(async () => {
    t = await startTestApp({
      config: { webhookAllowPrivate: true },
      // The delivery loop reads its time here; a long attempt timeout lets a test hold a round open.
      dispatcher: { now: () => new Date(Date.now() + ahead), timeoutMs: 600_000 },
    });
  });
  afterAll(async () => {
    release();
    await t.close();
  });
  const healthz = async () => {
    const response = await t.app.request('/healthz');
    return { status: response.status, body: (await response.json()) as any };
  };

  it('reports both loops running', async () => {
    const { status, body } = await healthz();
    expect(status).toBe(200);
    expect(body.status).toBe('ok');
    expect(body.workers.projections).toMatchObject({ state: 'running', failing_since: null, last_error: null });
    expect(body.workers.webhooks.state).toBe('running');
    await expect.poll(async () => (await healthz()).body.workers.projections.last_round_at).toMatch(/^\d{4}-\d{2}-\d{2}T/);
  });

  it('answers 503 stalled while a delivery round hangs for more than a minute, and 200 once it ends', async () => {
    const receiver = await startReceiver(async () => {
      await held;
      return { status: 200 };
    });
    try {
      const { private_key: key } = await t.business();
      expect((await t.request('POST', '/api/v1/webhooks', { key, body: { url: receiver.url, events: ['customer.created'] } })).status).toBe(201);
      expect((await t.request('POST', '/api/v1/customers', { key, body: { email: 'stall@example.com' } })).status).toBe(201);
      await expect.poll(() => receiver.received.length, { timeout: 10_000 }).toBe(1);
      expect((await healthz()).status).toBe(200); // in flight, but not for long yet

      ahead = 61_000; // the round started more than a minute ago, by the dispatcher's clock
      const stalled = await healthz();
      expect(stalled.status).toBe(503);
      expect(stalled.body.status).toBe('stalled');
      expect(stalled.body.workers.webhooks.state).toBe('stalled');
      expect(stalled.body.workers.projections.state).toBe('running');
      const metrics = await (await t.app.request('/metrics')).text();
      expect(metrics).toContain('loyalty_worker_loop_state{loop="webhooks",state="stalled"} 1');
      expect(metrics).toContain('loyalty_worker_loop_state{loop="projections",state="running"} 1');

      release();
      await expect.poll(async () => (await healthz()).status, { timeout: 10_000 }).toBe(200);
      expect((await healthz()).body.workers.webhooks.state).toBe('running');
    } finally {
      release();
      await receiver.close();
    }
  });

  it('/readyz, in any process, counts webhook messages pending and those overdue (due a minute ago, claimed by nobody)', async () => {
    const apiOnly = await instanceBeside(t, { runProjections: false });
    try {
      const { private_key: key } = await t.business();
      // Only an API process on this business's messages' database: nobody delivers to this port.
      expect((await t.request('POST', '/api/v1/webhooks', { key, body: { url: 'http://127.0.0.1:9/unanswered', events: ['customer.created'] } })).status).toBe(201);
      await t.services.dispatcher.stop();
      const before = (await apiOnly.request('GET', '/readyz', '')).body.webhooks;
      expect((await t.request('POST', '/api/v1/customers', { key, body: { email: 'overdue@example.com' } })).status).toBe(201);
      const queued = (await apiOnly.request('GET', '/readyz', '')).body;
      expect(queued.status).toBe('ready');
      expect(queued.webhooks).toEqual({ pending: before.pending + 1, overdue: before.overdue });
      // Due two minutes ago and still waiting: what a dead or stuck delivery loop leaves.
      await sql`update webhook_messages set next_attempt_at = now() - interval '2 minutes' where status = 'pending' and locked_until is null`.execute(t.services.db);
      const overdue = await apiOnly.request('GET', '/readyz', '');
      expect(overdue.status).toBe(200); // reported, not judged: the API still serves
      expect(overdue.body.webhooks.overdue).toBeGreaterThanOrEqual(1);
    } finally {
      t.services.dispatcher.start();
      await apiOnly.services.close();
    }
  });

  it('says only "ok" in a process that runs no workers (an API process)', async () => {
    const apiOnly = await instanceBeside(t, { runProjections: false });
    try {
      const response = await apiOnly.request('GET', '/healthz', '');
      expect(response.status).toBe(200);
      expect(response.body).toEqual({ status: 'ok' });
    } finally {
      await apiOnly.services.close();
    }
  });
});

describe.skipIf(!SERVER_MODE)('serve --role workers (needs DATABASE_URL)', () => {
  let store: ProcessStore;
  beforeAll(async () => {
    store = await freshStore();
  });
  afterAll(async () => {
    await killAllProcesses();
    await store.dispose();
  });

  it('answers /healthz, /readyz and /metrics on PORT for its container’s health check, and no API', async () => {
    const workers = await startServer(store, { role: 'workers' });
    expect(workers.stdout).toMatch(/Workers running: projections and webhook delivery \(health and metrics on http:\/\/127\.0\.0\.1:\d+\)/);
    const health = await api(workers.baseUrl, 'GET', '/healthz');
    expect(health.status).toBe(200);
    expect(health.body.workers.projections.state).toBe('running');
    expect(health.body.workers.webhooks.state).toBe('running');
    expect((await api(workers.baseUrl, 'GET', '/readyz')).body.status).toBe('ready');
    const metrics = await fetch(`${workers.baseUrl}/metrics`).then((r) => r.text());
    expect(metrics).toContain('loyalty_worker_loop_state{loop="webhooks",state="running"} 1');
    expect(metrics).toContain('# TYPE loyalty_webhook_deliveries_total counter');
    const customers = await api(workers.baseUrl, 'GET', '/api/v1/customers');
    expect(customers.status).toBe(404);
    expect(customers.body.code).toBe('not_found');
    workers.signal('SIGTERM');
    expect((await exitWithin(workers, 15_000)).code).toBe(0);
  }, 90_000);
});

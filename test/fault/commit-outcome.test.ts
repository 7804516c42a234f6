import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ProvisionedBusiness } from '../../src/cli/provision.js';
import { openDatabase } from '../../src/db/database.js';
import { migrateToLatest } from '../../src/db/migrations.js';
import { PgProxy } from '../support/pg-proxy.js';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { createServerDatabase } from '../support/test-database.js';

const SERVER_URL = process.env.DATABASE_URL;

/**
 * An append whose COMMIT reached the server, but whose answer never came back (issue 12, CONTRACT.md
 * §5 and §12): the write is applied once, whatever the client then does. The connection is lost
 * on the real server through a proxy; an embedded store has no connection to lose.
 */
describe.skipIf(!SERVER_URL)('a write whose commit answer is lost (PostgreSQL server; embedded PGlite has no connection to lose)', () => {
  let proxy: PgProxy;
  let app: TestApp;
  let business: ProvisionedBusiness;
  let drop: () => Promise<void>;

  beforeAll(async () => {
    const created = await createServerDatabase(SERVER_URL!);
    drop = created.drop;
    proxy = await PgProxy.start(created.url);
    const database = await openDatabase({ databaseUrl: proxy.url(created.url) });
    await migrateToLatest(database.db);
    app = await startTestApp({ database, config: { webhookAllowPrivate: true }, runDispatcher: false });
    business = await app.business();
  });

  afterAll(async () => {
    await app?.close();
    await proxy?.close();
    await drop?.();
  });

  /** The balance once the read models hold every committed event (an unanswered write is not waited for). */
  async function balanceOf(customerId: string): Promise<number> {
    await app.services.projections.settle(await app.services.store.headPosition());
    const found = await app.request('GET', `/api/v1/customers/${customerId}`, { key: business.private_key });
    expect(found.status).toBe(200);
    return found.body.points_balance as number;
  }

  function earn(customerId: string, headers: Record<string, string> = {}) {
    return app.request('POST', `/api/v1/customers/${customerId}/points/transaction`, {
      key: business.private_key,
      headers,
      body: { type: 'earn', amount: 10, description: 'order 1' },
    });
  }

  it('answers 503 saying the outcome is unknown, and a retry with the Idempotency-Key replays the 201 of the write that committed', async () => {
    const customerId = await app.newCustomer(business.private_key);
    const lost = proxy.loseNextCommitAnswer(/insert into events/i);
    const first = await earn(customerId, { 'idempotency-key': 'lost-answer-1' });
    await lost;
    expect(first.status).toBe(503);
    expect(first.body.code).toBe('unavailable');
    expect(first.body.message).toMatch(/may or may not have been applied/);

    const retry = await earn(customerId, { 'idempotency-key': 'lost-answer-1' });
    expect(retry.status).toBe(201);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect(retry.body).toMatchObject({ customer_id: customerId, type: 'earn', amount: 10, balance: 10 });
    expect(await balanceOf(customerId)).toBe(10);

    const ledger = await app.request('GET', `/api/v1/customers/${customerId}/transactions`, { key: business.private_key });
    expect(ledger.body.map((t: { id: string }) => t.id)).toEqual([retry.body.id]);
  });

  it('never runs an append whose commit answer was lost again by itself: without a key it is applied once', async () => {
    const customerId = await app.newCustomer(business.private_key);
    const lost = proxy.loseNextCommitAnswer(/insert into events/i);
    const first = await earn(customerId);
    await lost;
    expect(first.status).toBe(503);
    expect(await balanceOf(customerId)).toBe(10);
  });

  // Every create stores its answer in its append's transaction too: a retry replays the 201 of
  // the one record created, and never creates a second one.
  const creates: Array<{ path: string; list: string; body: Record<string, unknown> }> = [
    { path: '/api/v1/customers', list: '/api/v1/customers', body: { phone: '+15550100' } },
    { path: '/api/v1/rewards', list: '/api/v1/rewards', body: { title: 'Free espresso', points_cost: 150, reward_type: 'digital' } },
    { path: '/api/v1/tiers', list: '/api/v1/tiers', body: { name: 'Gold', points_threshold: 500, multiplier: 2 } },
    { path: '/api/v1/event-types', list: '/api/v1/event-types', body: { name: 'review', display_name: 'Review', default_points: 5 } },
    { path: '/api/v1/webhooks', list: '/api/v1/webhooks', body: { url: 'http://127.0.0.1:9/hooks', events: ['points.earned'] } },
    { path: '/api/v1/keys', list: '/api/v1/keys', body: { type: 'private', name: 'Till 7', permissions: ['points:write'] } },
  ];

  for (const { path, list, body } of creates) {
    it(`POST ${path}: 503 on the lost answer, then the retry replays the one record created`, async () => {
      const idempotencyKey = `lost-create-${path}`;
      const lost = proxy.loseNextCommitAnswer(/insert into events/i);
      const first = await app.request('POST', path, { key: business.private_key, headers: { 'idempotency-key': idempotencyKey }, body });
      await lost;
      expect(first.status).toBe(503);
      expect(first.body.message).toMatch(/may or may not have been applied/);

      const retry = await app.request('POST', path, { key: business.private_key, headers: { 'idempotency-key': idempotencyKey }, body });
      expect(retry.status).toBe(201);
      expect(retry.headers.get('idempotent-replayed')).toBe('true');
      expect(retry.body).toMatchObject(body);

      await app.services.projections.settle(await app.services.store.headPosition());
      const listed = await app.request('GET', list, { key: business.private_key });
      const matching = listed.body.filter((r: Record<string, unknown>) => Object.entries(body).every(([k, v]) => JSON.stringify(r[k]) === JSON.stringify(v)));
      expect(matching.map((r: { id: string }) => r.id)).toEqual([retry.body.id]);
      // The replay is the answer as built from the appended event: the read model shows the same record.
      const { secret: _secret, key: _key, ...answered } = retry.body;
      expect(matching[0]).toEqual(answered);
    });
  }
});

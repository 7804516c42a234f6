import { Agent, request } from 'undici';
import { afterAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/db/database.js';
import { streams } from '../../src/events/streams.js';
import { earnLoops, until } from './earn-loops.js';
import { api, exitWithin, freshStore, killAllProcesses, printedKeys, type ProcessStore, startServer } from './process-helpers.js';

/** Why a request failed, by the code undici gives: a refused connection means the request was never sent. */
/**
 * CONTRACT.md §12: on SIGTERM the server stops accepting, answers every request it has received
 * (with `Connection: close` from then on), and exits 0 within 10 s; a write that was applied is
 * always answered. Clients here keep their connections alive, as every HTTP client library does.
 */
describe('drain on SIGTERM under keep-alive load', () => {
  const stores: ProcessStore[] = [];
  afterAll(async () => {
    await killAllProcesses();
    await Promise.all(stores.map((s) => s.dispose()));
  });

  it('answers every request already sent, exits 0, and every applied earn was answered', async () => {
    const store = await freshStore({ migrated: true });
    stores.push(store);
    const server = await startServer(store);
    const { privateKey: key } = printedKeys(server.stdout);
    const customer = await api(server.baseUrl, 'POST', '/api/v1/customers', { key: key!, body: { email: 'drain@example.com' } });
    expect(customer.status).toBe(201);
    // Another customer with 20 earns and no snapshot yet (the first falls due at 200 events).
    const quiet = await api(server.baseUrl, 'POST', '/api/v1/customers', { key: key!, body: { email: 'quiet@example.com' } });
    for (let i = 0; i < 20; i++) {
      expect((await api(server.baseUrl, 'POST', `/api/v1/customers/${quiet.body.id}/points/transaction`, { key: key!, body: { type: 'earn', amount: 1 } })).status).toBe(201);
    }

    const agent = new Agent({ keepAliveTimeout: 30_000, connections: 16 });
    const load = earnLoops(server.baseUrl, key!, Array.from({ length: 16 }, () => ({ customerId: customer.body.id, agent })));
    await until(load.sent, 200);
    server.signal('SIGTERM');
    const exit = await exitWithin(server, 10_000);
    await load.done;
    await agent.close();
    const statuses = load.statuses.flat();
    const failures = load.failures;

    expect(exit).toEqual({ code: 0, signal: null });
    // Every loop ended on a refused connection (the server no longer listens), none on a request lost in flight.
    expect(failures.filter((code) => code !== 'ECONNREFUSED')).toEqual([]);
    expect(statuses.filter((s) => s !== 201)).toEqual([]);

    // Before it exited, it snapshotted the quiet customer's state at its last event, for the next start
    // (21 events since no snapshot: worth one; the busy customer's 200-odd lots ask for more events
    // since its snapshot at 200 than it may have).
    const database = await openDatabase({ databaseUrl: store.env.DATABASE_URL, dataDir: store.env.LOYALTY_DATA_DIR });
    try {
      const snapshot = await database.db
        .selectFrom('aggregate_snapshots')
        .select('revision')
        .where('stream_id', '=', streams.customer(quiet.body.id))
        .executeTakeFirst();
      expect(Number(snapshot?.revision)).toBe(20); // registered, then 20 earns
    } finally {
      await database.close();
    }

    const again = await startServer(store);
    const after = await api(again.baseUrl, 'GET', `/api/v1/customers/${customer.body.id}`, { key: key! });
    expect(after.body.points_balance).toBe(statuses.length);
    again.signal('SIGTERM');
    expect(await exitWithin(again, 10_000)).toEqual({ code: 0, signal: null });
  }, 120_000);

  it('with LOYALTY_SHUTDOWN_DELAY_MS, answers /readyz 503 `stopping` and serves on as usual for the delay, then drains and exits 0', async () => {
    const store = await freshStore();
    stores.push(store);
    const server = await startServer(store, { env: { LOYALTY_SHUTDOWN_DELAY_MS: '6000' } });
    const { privateKey: key } = printedKeys(server.stdout);
    expect((await api(server.baseUrl, 'GET', '/readyz')).status).toBe(200);

    const signalledAt = Date.now();
    server.signal('SIGTERM');
    let ready = await api(server.baseUrl, 'GET', '/readyz');
    for (let i = 0; i < 50 && ready.status === 200; i++) ready = await api(server.baseUrl, 'GET', '/readyz');
    expect(ready.status).toBe(503);
    expect(ready.body.status).toBe('stopping');
    // Still listening and keeping connections alive: a load balancer has time to move away.
    const created = await request(`${server.baseUrl}/api/v1/customers`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': key! },
      body: JSON.stringify({ email: 'late@example.com' }),
    });
    await created.body.text();
    expect(created.statusCode).toBe(201);
    expect(created.headers.connection).not.toBe('close');

    expect(await exitWithin(server, 16_000)).toEqual({ code: 0, signal: null });
    expect(Date.now() - signalledAt).toBeGreaterThanOrEqual(6000);
  }, 120_000);
});

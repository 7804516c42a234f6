import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, type ApiResponse, freshStore, killAllProcesses, killProcess, type ProcessStore, runCli, SERVER_MODE, startServer } from '../e2e/process-helpers.js';
import { PgProxy } from '../support/pg-proxy.js';

/** The lease of process A's claims in these tests (`LOYALTY_CLAIM_LEASE_MS`; 60 s by default). */
const LEASE_MS = 6_000;
/** How long A waits for the answer to its COMMIT before it gives up (`LOYALTY_DB_TIMEOUT_MS`). */
const A_DB_TIMEOUT_MS = 3_000;

/**
 * Issue 12: a write whose outcome its process never learned (its COMMIT unanswered), retried with
 * its Idempotency-Key on another process, is applied exactly once. Process A reaches the database
 * through a proxy that keeps A's COMMIT from the server; process B reaches it directly.
 * - A dies (kill -9): B takes the key over at once, since A's session, and its mark, are gone.
 * - A is alive but cut off from the database, so it cannot release the key: B answers 409
 *   `idempotency_key_in_progress` until A's lease has passed, then applies the write.
 */
describe.skipIf(!SERVER_MODE)(
  `retrying a write whose commit outcome is unknown, on another process${SERVER_MODE ? '' : ' (skipped: needs DATABASE_URL — the embedded store serves one process)'}`,
  () => {
    let store: ProcessStore;
    let proxy: PgProxy;
    let key: string;
    let b: Awaited<ReturnType<typeof startServer>>;

    beforeAll(async () => {
      const base = await freshStore();
      store = { env: { ...base.env, LOYALTY_RATE_LIMIT_RPS: '0' }, dispose: base.dispose };
      proxy = await PgProxy.start(store.env.DATABASE_URL!);
      const init = await runCli(['init', '--json'], store);
      expect(init.code, init.stderr).toBe(0);
      key = JSON.parse(init.stdout).private_key;
      b = await startServer(store);
    }, 120_000);

    afterAll(async () => {
      await killAllProcesses();
      await proxy?.close();
      await store?.dispose();
    });

    /** Process A: the same database through the proxy, with a short lease and database deadline. */
    const startA = () =>
      startServer({
        env: {
          ...store.env,
          DATABASE_URL: proxy.url(store.env.DATABASE_URL!),
          LOYALTY_CLAIM_LEASE_MS: String(LEASE_MS),
          LOYALTY_DB_TIMEOUT_MS: String(A_DB_TIMEOUT_MS),
        },
        dispose: async () => {},
      });

    async function newCustomer(): Promise<string> {
      const created = await api(b.baseUrl, 'POST', '/api/v1/customers', { key, body: { email: `c-${Math.random().toString(36).slice(2)}@example.com` } });
      expect(created.status).toBe(201);
      return created.body.id as string;
    }

    const earn = (baseUrl: string, customerId: string, idempotencyKey: string): Promise<ApiResponse> =>
      api(baseUrl, 'POST', `/api/v1/customers/${customerId}/points/transaction`, {
        key,
        headers: { 'idempotency-key': idempotencyKey },
        body: { type: 'earn', amount: 10 },
      });

    async function ledgerOf(customerId: string) {
      const ledger = await api(b.baseUrl, 'GET', `/api/v1/customers/${customerId}/transactions`, { key });
      expect(ledger.status).toBe(200);
      return ledger.body as Array<{ id: string; amount: number }>;
    }

    it('takes over the key of a process that died at once, and applies the write once', async () => {
      const a = await startA();
      const customerId = await newCustomer();
      const held = proxy.holdNextCommit(/insert into events/i);
      const lost = earn(a.baseUrl, customerId, 'dead-holder').catch((error: unknown) => error);
      await held;
      await killProcess(a.child);
      expect(await lost).toBeInstanceOf(Error); // A never answered

      // Well within A's lease, let alone the default 60 s: A is known dead.
      const started = Date.now();
      let retry = await earn(b.baseUrl, customerId, 'dead-holder');
      while (retry.status === 409 && retry.body.code === 'idempotency_key_in_progress' && Date.now() - started < LEASE_MS / 2) {
        retry = await earn(b.baseUrl, customerId, 'dead-holder');
      }
      expect(retry.status, JSON.stringify(retry.body)).toBe(201);
      expect(Date.now() - started).toBeLessThan(LEASE_MS);
      const again = await earn(b.baseUrl, customerId, 'dead-holder');
      expect(again.status).toBe(201);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(again.body.id).toBe(retry.body.id);
      expect((await ledgerOf(customerId)).map((t) => t.id)).toEqual([retry.body.id]);
    }, 120_000);

    it('refuses a retry while a live process that cannot reach the database holds the key, and applies the write once after its lease', async () => {
      const a = await startA();
      const customerId = await newCustomer();
      const held = proxy.holdNextCommit(/insert into events/i);
      const sentAt = Date.now();
      const first = earn(a.baseUrl, customerId, 'silent-holder');
      await held;
      // A is alive, and so is its session marking it alive, but it can no longer release its key.
      proxy.partition();

      // The first retry waits for A's transaction (which holds the key's record) to end: A gives up
      // on its COMMIT after its database deadline and drops the connection, and it rolls back.
      const early = await earn(b.baseUrl, customerId, 'silent-holder');
      expect(early.status, JSON.stringify(early.body)).toBe(409);
      expect(early.body.code).toBe('idempotency_key_in_progress');
      expect(early.headers.get('retry-after')).toBe('1');

      let retry = early;
      while (retry.status === 409 && Date.now() - sentAt < 30_000) {
        await new Promise((resolve) => setTimeout(resolve, 250));
        retry = await earn(b.baseUrl, customerId, 'silent-holder');
      }
      expect(retry.status, JSON.stringify(retry.body)).toBe(201);
      expect(Date.now() - sentAt).toBeGreaterThanOrEqual(LEASE_MS);

      const answerOfA = await first;
      expect(answerOfA.status).toBe(503);
      expect(answerOfA.body.message).toMatch(/may or may not have been applied/);
      const again = await earn(b.baseUrl, customerId, 'silent-holder');
      expect(again.status).toBe(201);
      expect(again.body.id).toBe(retry.body.id);
      expect((await ledgerOf(customerId)).map((t) => t.id)).toEqual([retry.body.id]);
      await killProcess(a.child);
    }, 120_000);
  },
);

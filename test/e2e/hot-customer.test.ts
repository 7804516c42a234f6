import { afterAll, describe, expect, it } from 'vitest';
import { api, freshStore, killAllProcesses, type ProcessStore, runCli, SERVER_MODE, startServer } from './process-helpers.js';

/**
 * CONTRACT.md §12: any number of API processes may serve one database, and no request fails
 * because another process wrote to the same customer. Three API processes and two worker
 * processes; every request is spread over the three.
 */
describe.skipIf(!SERVER_MODE)(
  `a hot customer across API processes${SERVER_MODE ? '' : ' (skipped: needs DATABASE_URL — the embedded store serves one process)'}`,
  () => {
    let store: ProcessStore;
    afterAll(async () => {
      await killAllProcesses();
      await store?.dispose();
    });

    it('answers 300 concurrent earns on one customer with 201 each, the balance exact on every process; 5 in stock, 5 redeemed', async () => {
      const base = await freshStore();
      // One HTTP process each (serve forks one per core otherwise): three processes, as the contract's case.
      store = { env: { ...base.env, LOYALTY_PROCESSES: '1', LOYALTY_RYW_TIMEOUT_MS: '30000', LOYALTY_RATE_LIMIT_RPS: '0' }, dispose: base.dispose };
      const init = await runCli(['init', '--json'], store);
      expect(init.code, init.stderr).toBe(0);
      const key: string = JSON.parse(init.stdout).private_key;
      const servers = await Promise.all([
        startServer(store, { role: 'api' }),
        startServer(store, { role: 'api' }),
        startServer(store, { role: 'api' }),
        startServer(store, { role: 'workers' }),
        startServer(store, { role: 'workers' }),
      ]);
      const apis = servers.slice(0, 3);
      const on = (i: number) => apis[i % apis.length]!.baseUrl;

      const customer = await api(on(0), 'POST', '/api/v1/customers', { key, body: { email: 'hot@example.com' } });
      expect(customer.status).toBe(201);
      const path = `/api/v1/customers/${customer.body.id}/points/transaction`;
      const earns = await Promise.all(
        Array.from({ length: 300 }, (_, i) => api(on(i), 'POST', path, { key, body: { type: 'earn', amount: 1 + (i % 3), reference: `hot-${i}` } })),
      );
      const refused = earns.filter((r) => r.status !== 201).map((r) => `${r.status} ${r.body?.code}`);
      expect(refused).toEqual([]);
      const sent = Array.from({ length: 300 }, (_, i) => 1 + (i % 3)).reduce((a, b) => a + b, 0);
      for (const server of apis) {
        const read = await api(server.baseUrl, 'GET', `/api/v1/customers/${customer.body.id}`, { key });
        expect(read.body.points_balance).toBe(sent);
      }

      // A reward with 5 in stock, redeemed by 12 customers at once across the processes.
      const reward = await api(on(0), 'POST', '/api/v1/rewards', { key, body: { title: 'Mug', points_cost: 10, reward_type: 'physical', stock_quantity: 5 } });
      expect(reward.status).toBe(201);
      const buyers = await Promise.all(
        Array.from({ length: 12 }, async (_, i) => {
          const c = await api(on(i), 'POST', '/api/v1/customers', { key, body: { email: `buyer-${i}@example.com` } });
          await api(on(i), 'POST', `/api/v1/customers/${c.body.id}/points/transaction`, { key, body: { type: 'earn', amount: 50 } });
          return c.body.id as string;
        }),
      );
      const redemptions = await Promise.all(
        buyers.map((id, i) => api(on(i), 'POST', `/api/v1/customers/${id}/redemptions`, { key, body: { reward_id: reward.body.id } })),
      );
      const outcomes = redemptions.map((r) => (r.status === 201 ? 'redeemed' : r.body.code)).sort();
      expect(outcomes).toEqual([...Array(5).fill('redeemed'), ...Array(7).fill('out_of_stock')].sort());
      const after = await api(on(1), 'GET', `/api/v1/rewards/${reward.body.id}`, { key });
      expect(after.body.stock_quantity).toBe(0);
    }, 180_000);
  },
);

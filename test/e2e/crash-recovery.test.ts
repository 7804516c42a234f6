import { afterAll, describe, expect, it, vi } from 'vitest';
import {
  api,
  exitWithin,
  freshStore,
  killAllProcesses,
  listAll,
  printedKeys,
  type ProcessStore,
  SERVER_MODE,
  startServer,
} from './process-helpers.js';

const CUSTOMERS = 4;
const WRITERS = 8;
/** SIGKILL once this many earns have been acknowledged: the writers are still going. */
const KILL_AFTER_ACKS = 40;

interface Acknowledged {
  id: string;
  customerId: string;
  amount: number;
}

const POINTS_EVENTS = new Set(['PointsEarned', 'PointsDeducted', 'PointsAdjusted']);

describe(`crash recovery (${SERVER_MODE ? 'PostgreSQL server' : 'embedded store'})`, () => {
  let store: ProcessStore;

  afterAll(async () => {
    await killAllProcesses();
    await store?.dispose();
  });

  it('keeps every acknowledged write after kill -9 under load, and the read models agree with the log', async () => {
    store = await freshStore({ migrated: true });
    const first = await startServer(store);
    const { privateKey } = printedKeys(first.stdout);
    const key = privateKey!;

    const customerIds: string[] = [];
    for (let i = 0; i < CUSTOMERS; i++) {
      const created = await api(first.baseUrl, 'POST', '/api/v1/customers', { key, body: { email: `crash-${i}@example.com` } });
      expect(created.status).toBe(201);
      customerIds.push(created.body.id);
    }

    // Writers earn points concurrently until the server dies under them.
    const acknowledged: Acknowledged[] = [];
    const unexpected: string[] = [];
    let killed = false;
    const kill = () => {
      if (killed) return;
      killed = true;
      first.signal('SIGKILL');
    };
    const writer = async (w: number) => {
      for (let n = 0; !killed; n++) {
        const customerId = customerIds[(w + n) % CUSTOMERS]!;
        const amount = 1 + ((w * 31 + n * 7) % 97);
        let response;
        try {
          response = await api(first.baseUrl, 'POST', `/api/v1/customers/${customerId}/points/transaction`, {
            key,
            body: { type: 'earn', amount, reference: `w${w}-n${n}` },
          });
        } catch (error) {
          // After the kill the connection dies with the server: that write is unacknowledged.
          if (!killed) unexpected.push(`request failed before the kill: ${String(error)}`);
          return;
        }
        if (response.status === 201) {
          acknowledged.push({ id: response.body.id, customerId, amount });
          if (acknowledged.length >= KILL_AFTER_ACKS) kill();
        } else if (!killed) {
          unexpected.push(`${response.status} ${JSON.stringify(response.body)}`);
          if (unexpected.length >= 10) kill(); // failing anyway: stop the load
        }
      }
    };
    await Promise.all(Array.from({ length: WRITERS }, (_, w) => writer(w)));
    kill(); // already done, unless every writer stopped early
    expect(await exitWithin(first, 10_000)).toEqual({ code: null, signal: 'SIGKILL' });
    expect(unexpected).toEqual([]);
    expect(acknowledged.length).toBeGreaterThanOrEqual(KILL_AFTER_ACKS);

    const second = await startServer(store);
    // The store is not empty, so no new business: the keys are not printed again.
    expect(second.stdout).not.toMatch(/sk_live_/);

    for (const customerId of customerIds) {
      const mine = acknowledged.filter((a) => a.customerId === customerId);
      // The restarted server's projections catch up from their checkpoints; wait for them.
      await vi.waitFor(
        async () => {
          const [customer, ledger, stream] = await Promise.all([
            api(second.baseUrl, 'GET', `/api/v1/customers/${customerId}`, { key }),
            listAll(second.baseUrl, `/api/v1/customers/${customerId}/transactions?limit=200`, key),
            listAll(second.baseUrl, `/api/v1/customers/${customerId}/stream?limit=200`, key),
          ]);
          const movements = stream.filter((e) => POINTS_EVENTS.has(e.type));

          // Every acknowledged write is in the log and in the ledger, with its amount.
          const logged = new Map(movements.map((e) => [e.data.transaction_id, e.data.amount]));
          const ledgerById = new Map(ledger.map((t) => [t.id, t]));
          for (const ack of mine) {
            expect(logged.get(ack.id), `log has ${ack.id}`).toBe(ack.amount);
            expect(ledgerById.get(ack.id)?.amount, `ledger has ${ack.id}`).toBe(ack.amount);
          }

          // The ledger is exactly the log's points events, in order, with running balances.
          expect(ledger.map((t) => t.id)).toEqual(movements.map((e) => e.data.transaction_id));
          let running = 0;
          for (const [i, event] of movements.entries()) {
            running += event.data.amount;
            expect(event.data.balance).toBe(running);
            expect(ledger[i].balance).toBe(running);
          }

          // Balance = fold of the stream = the ledger's last balance = the sum of its lines.
          const fold = movements.reduce((sum, e) => sum + e.data.amount, 0);
          const ledgerSum = ledger.reduce((sum, t) => sum + t.amount, 0);
          expect(customer.status).toBe(200);
          expect(customer.body.points_balance).toBe(fold);
          expect(customer.body.points_balance).toBe(ledgerSum);
          expect(customer.body.points_balance).toBe(ledger.at(-1)?.balance ?? 0);
          expect(customer.body.lifetime_earned).toBe(fold);
        },
        { timeout: 15_000, interval: 250 },
      );
    }

    // Positions are intact: the restarted server keeps recording on the same streams.
    const customerId = customerIds[0]!;
    const before = await api(second.baseUrl, 'GET', `/api/v1/customers/${customerId}`, { key });
    const after = await api(second.baseUrl, 'POST', `/api/v1/customers/${customerId}/points/transaction`, {
      key,
      body: { type: 'earn', amount: 5, reference: 'after-restart' },
    });
    expect(after.status).toBe(201);
    expect(after.body.balance).toBe(before.body.points_balance + 5);
  }, 120_000);
});

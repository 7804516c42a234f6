import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import { afterAll, describe, expect, it, vi } from 'vitest';
import {
  api,
  freshStore,
  killAllProcesses,
  killProcess,
  listAll,
  type ProcessStore,
  runCli,
  SERVER_MODE,
  type ServerProcess,
  startServer,
} from './process-helpers.js';

const CUSTOMERS = 6;
const EARNS_PER_CUSTOMER = 16;

/** A receiver that answers 200 and counts messages by `webhook-id` (a redelivery repeats the id). */
async function startReceiver() {
  const ids: string[] = [];
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      ids.push(String(req.headers['webhook-id']));
      res.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`,
    distinct: () => new Set(ids).size,
    close: () => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))),
  };
}

describe.skipIf(!SERVER_MODE)(
  `scale-out: two API processes and two worker processes on one PostgreSQL${SERVER_MODE ? '' : ' (skipped: needs DATABASE_URL — the embedded store serves one process)'}`,
  () => {
    let store: ProcessStore;
    let receiver: Awaited<ReturnType<typeof startReceiver>>;
    afterAll(async () => {
      await killAllProcesses();
      await receiver?.close();
      await store?.dispose();
    });

    it(
      'gives the results of one process: exact balances, one transaction per raced reference, projections and webhooks surviving a worker killed with -9',
      async () => {
        const base = await freshStore();
        // A long read-your-writes bound: a write answered with its line missing from a read would
        // mean no worker projected it, not a slow one.
        store = { env: { ...base.env, LOYALTY_WEBHOOK_ALLOW_PRIVATE: '1', LOYALTY_RYW_TIMEOUT_MS: '30000' }, dispose: base.dispose };
        receiver = await startReceiver();
        const [init, apiA, apiB, workerA, workerB] = await Promise.all([
          runCli(['init', '--json'], store),
          startServer(store, { role: 'api' }),
          startServer(store, { role: 'api' }),
          startServer(store, { role: 'workers' }),
          startServer(store, { role: 'workers' }),
        ]);
        expect(init.code, init.stderr).toBe(0);
        const key: string = JSON.parse(init.stdout).private_key;
        const apis: ServerProcess[] = [apiA, apiB];
        const post = (via: ServerProcess, path: string, body: unknown) => api(via.baseUrl, 'POST', `/api/v1${path}`, { key, body });

        const hook = await post(apiA, '/webhooks', { url: receiver.url, events: ['points.earned'] });
        expect(hook.status, JSON.stringify(hook.body)).toBe(201);
        const customers: string[] = [];
        for (let c = 0; c < CUSTOMERS; c++) {
          const created = await post(apis[c % 2]!, '/customers', { email: `c${c}@example.com` });
          expect(created.status, JSON.stringify(created.body)).toBe(201);
          customers.push(created.body.id);
        }

        // Every customer's earns go through both API processes at once; each earn, once answered,
        // must show in the ledger read through the *other* process (read-your-writes across them).
        const earned = new Map<string, number>(customers.map((id) => [id, 0]));
        let earns = 0;
        let killed = false;
        const earn = async (c: number, n: number) => {
          const id = customers[c]!;
          const amount = 1 + ((c * 7 + n) % 13);
          const [via, other] = n % 2 === 0 ? [apiA, apiB] : [apiB, apiA];
          const answer = await post(via, `/customers/${id}/points/transaction`, { type: 'earn', amount, reference: `order-${c}-${n}` });
          expect(answer.status, JSON.stringify(answer.body)).toBe(201);
          earned.set(id, earned.get(id)! + amount);
          earns++;
          const ledger = await listAll(other.baseUrl, `/api/v1/customers/${id}/transactions?limit=200`, key);
          expect(ledger.map((line) => line.id)).toContain(answer.body.id);
          // Halfway through, one worker dies mid-load; the other must carry every projection on.
          if (earns >= (CUSTOMERS * EARNS_PER_CUSTOMER) / 2 && !killed) {
            killed = true;
            await killProcess(workerA.child);
          }
        };
        // One reference per customer raced across both processes: exactly one transaction, the other 409.
        const race = async (c: number) => {
          const id = customers[c]!;
          const body = { type: 'earn', amount: 100, reference: `raced-${c}` };
          const answers = await Promise.all([post(apiA, `/customers/${id}/points/transaction`, body), post(apiB, `/customers/${id}/points/transaction`, body)]);
          expect(answers.map((a) => a.status).sort()).toEqual([201, 409]);
          const [won, lost] = answers[0]!.status === 201 ? answers : [answers[1]!, answers[0]!];
          expect(lost!.body.code).toBe('duplicate_transaction');
          expect(lost!.body.transaction.id).toBe(won!.body.id);
          earned.set(id, earned.get(id)! + 100);
          earns++;
        };
        await Promise.all(
          customers.map(async (_, c) => {
            const lanes = [0, 1].map(async (lane) => {
              for (let n = lane; n < EARNS_PER_CUSTOMER; n += 2) {
                await earn(c, n);
                if (n === 6) await race(c);
              }
            });
            await Promise.all(lanes);
          }),
        );
        expect(killed).toBe(true);
        expect((await workerA.exited).signal).toBe('SIGKILL');
        expect(workerB.child.exitCode).toBeNull();

        // Exact balances and one ledger line per accepted earn, read through either process.
        for (const [c, id] of customers.entries()) {
          const summary = await api(apis[c % 2]!.baseUrl, 'GET', `/api/v1/customers/${id}/summary`, { key });
          expect(summary.status).toBe(200);
          expect(summary.body.points.balance, id).toBe(earned.get(id));
          const ledger = await listAll(apis[(c + 1) % 2]!.baseUrl, `/api/v1/customers/${id}/transactions?limit=200`, key);
          expect(ledger).toHaveLength(EARNS_PER_CUSTOMER + 1);
          expect(new Set(ledger.map((line) => line.reference)).size).toBe(EARNS_PER_CUSTOMER + 1);
        }

        // Every projection reached the head of the log, applied once (no batch twice, none skipped),
        // and the webhook reactor queued one message per earn.
        const client = new pg.Client({ connectionString: store.env.DATABASE_URL });
        await client.connect();
        try {
          const { rows } = await client.query<{ lagging: number; earns: number }>(
            `select (select count(*)::int from projection_checkpoints
                      where global_position < (select max(global_position) from events)) as lagging,
                    (select count(*)::int from ledger_entries where type = 'earn') as earns`,
          );
          expect(rows[0]).toEqual({ lagging: 0, earns });

          // Webhooks kept being delivered after the kill: every message is delivered, except those the
          // killed worker had claimed, which stay queued until their claim expires (then another
          // dispatcher sends them: test/e2e/webhook-restart.test.ts).
          await vi.waitFor(
            async () => {
              const { rows: [queue] } = await client.query<{ total: number; delivered: number; held: number }>(
                `select count(*)::int as total,
                        count(*) filter (where status = 'delivered')::int as delivered,
                        count(*) filter (where status = 'pending' and locked_until > now())::int as held
                   from webhook_messages`,
              );
              expect(queue!.total).toBe(earns);
              expect(queue!.delivered + queue!.held).toBe(earns);
              expect(queue!.held).toBeLessThanOrEqual(20); // one claim batch of the dead dispatcher
              expect(receiver.distinct()).toBeGreaterThanOrEqual(queue!.delivered);
            },
            { timeout: 20_000, interval: 100 },
          );
        } finally {
          await client.end();
        }
      },
      60_000,
    );
  },
);

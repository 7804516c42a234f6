import pg from 'pg';
import { Webhook } from 'standardwebhooks';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { seedLots } from '../support/seed-lots.js';
import { startReceiver } from '../support/webhook-receiver.js';
import { api, freshStore, killAllProcesses, killProcess, printedKeys, type ProcessStore, SERVER_MODE, startServer } from './process-helpers.js';

const LOTS = 5000;
const CUSTOMERS = 500;

async function query<T extends pg.QueryResultRow>(url: string, text: string): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<T>(text)).rows;
  } finally {
    await client.end();
  }
}

/**
 * CONTRACT.md §13 scheduling under processes: two worker processes on one PostgreSQL database
 * catch up on lots that fell due while nobody ran (one due instant for all), and one of them is
 * killed with SIGKILL in the middle of the run. Every lot expires exactly once, and every
 * `points.expired` webhook arrives at least once, each copy with the same `webhook-id`.
 */
describe.skipIf(!SERVER_MODE)('lifecycle scheduler, two worker processes and a kill -9 (PostgreSQL server)', () => {
  const stores: ProcessStore[] = [];
  const receivers: Array<{ close(): Promise<void> }> = [];
  afterEach(async () => {
    await killAllProcesses();
    await Promise.all(receivers.splice(0).map((r) => r.close()));
  });
  afterAll(async () => {
    await Promise.all(stores.map((s) => s.dispose()));
  });

  it('expires every lot exactly once and delivers every expiry webhook with a stable webhook-id', async () => {
    const base = await freshStore();
    stores.push(base);
    const store: ProcessStore = { env: { ...base.env, LOYALTY_WEBHOOK_ALLOW_PRIVATE: '1' }, dispose: base.dispose };
    const url = store.env.DATABASE_URL!;
    const receiver = await startReceiver();
    receivers.push(receiver);

    // First start: a business, its keys and a webhook; then the server stops and lots fall due meanwhile.
    const setup = await startServer(store);
    const key = printedKeys(setup.stdout).privateKey!;
    const webhook = await api(setup.baseUrl, 'POST', '/api/v1/webhooks', { key, body: { url: receiver.url, events: ['points.expired'] } });
    expect(webhook.status, JSON.stringify(webhook.body)).toBe(201);
    await killProcess(setup.child);
    const [business] = await query<{ id: string }>(url, 'select id from businesses');

    // Two workers: one serving HTTP too, one workers-only; then the lots that fell due while
    // nobody ran arrive (seeded straight into the log), and the second worker is killed mid-run.
    const first = await startServer(store);
    const second = await startServer(store, { role: 'workers' });
    await seedLots(url, business!.id, CUSTOMERS, LOTS, new Date(Date.now() - 60_000));
    // A lot expired as often as an expiry names it (one event names every lot of a customer's instant).
    const expired = async () =>
      Number((await query<{ n: string }>(url, `select coalesce(sum(jsonb_array_length(data->'lots')), 0) as n from events where type = 'PointsExpired'`))[0]!.n);
    await vi.waitFor(async () => expect(await expired()).toBeGreaterThan(0), { timeout: 60_000, interval: 20 });
    const atKill = await expired();
    await killProcess(second.child);
    expect(atKill).toBeLessThan(LOTS); // killed in the middle of the run

    await vi.waitFor(async () => expect(await expired()).toBe(LOTS), { timeout: 120_000, interval: 200 });
    const perLot = await query<{ lot: string; n: string }>(
      url,
      `select l->>'transaction_id' as lot, count(*) as n from events e cross join lateral jsonb_array_elements(e.data->'lots') l
        where e.type = 'PointsExpired' group by 1`,
    );
    expect(perLot).toHaveLength(LOTS);
    expect(perLot.filter((r) => Number(r.n) !== 1)).toEqual([]);
    // Nothing more comes: once the last runs have recorded their next instants, the index holds no due work.
    const due = async () => Number((await query<{ n: string }>(url, `select count(*) as n from customer_due where due_at <= now()`))[0]!.n);
    await vi.waitFor(async () => expect(await due(), first.stderr).toBe(0), { timeout: 30_000, interval: 200 });

    // Every expiry's webhook, at least once, naming every lot; copies of one carry one webhook-id; all signed with the webhook's secret.
    const lotsOf = (r: (typeof receiver.received)[number]) => ((r.payload?.data?.lots ?? []) as Array<{ transaction_id: string }>).map((l) => l.transaction_id);
    await vi.waitFor(() => expect(new Set(receiver.received.flatMap(lotsOf)).size).toBe(LOTS), { timeout: 120_000, interval: 200 });
    const idsPerExpiry = new Map<string, Set<string>>();
    const signer = new Webhook(webhook.body.secret);
    for (const delivery of receiver.received) {
      expect(delivery.payload.type).toBe('points.expired');
      expect(() => signer.verify(delivery.body, delivery.headers)).not.toThrow();
      const expiry = delivery.payload.data.transaction_id as string;
      if (!idsPerExpiry.has(expiry)) idsPerExpiry.set(expiry, new Set());
      idsPerExpiry.get(expiry)!.add(delivery.headers['webhook-id']!);
    }
    expect(idsPerExpiry.size).toBe(CUSTOMERS); // one expiry per customer: its lots all expire at one instant
    expect([...idsPerExpiry.values()].filter((ids) => ids.size !== 1)).toEqual([]);
    expect(receiver.received[0]!.payload.data).toMatchObject({ amount: (LOTS / CUSTOMERS) * 10, expired_at: expect.any(String), customer_id: expect.any(String) });
    expect(lotsOf(receiver.received[0]!)).toHaveLength(LOTS / CUSTOMERS);

    const customer = receiver.received[0]!.payload.data.customer_id as string;
    const after = await api(first.baseUrl, 'GET', `/api/v1/customers/${customer}`, { key });
    expect(after.body).toMatchObject({ points_balance: 0, lifetime_expired: LOTS / CUSTOMERS * 10, next_expiring: null });
  }, 300_000);
});

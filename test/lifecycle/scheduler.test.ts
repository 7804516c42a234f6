import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyDueThroughCommands } from '../../src/lifecycle/apply-due.js';
import { LifecycleScheduler } from '../../src/lifecycle/scheduler.js';
import { customersProjector } from '../../src/projections/customers/customers-projector.js';
import { rebuildProjection } from '../../src/projections/rebuild.js';
import type { CommandContext } from '../../src/events/metadata.js';
import { streams } from '../../src/events/streams.js';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { type Receiver, signatureFor, startReceiver } from '../support/webhook-receiver.js';

const DAY = 86_400_000;
const T0 = Date.parse('2026-03-01T12:00:00.000Z');

/**
 * The lifecycle scheduler (CONTRACT.md §13) in the service, with the injected clock moved forward
 * (nothing sleeps until a due time): it finds due customers by the `customer_due` index, does their
 * work through the command path, and the read models, the lots route and the webhooks show it.
 */
describe('lifecycle scheduler (injected clock)', () => {
  let at = T0;
  const clock = { now: () => new Date(at) };
  let t: TestApp;
  let key: string;
  let businessId: string;
  let receiver: Receiver;
  let secret: string;

  const ctx = (): CommandContext => ({ businessId, actor: 'test', requestId: null, idempotencyKey: null, now: clock.now() });
  const get = async (path: string) => {
    const res = await t.request('GET', path, { key });
    expect(res.status, res.text).toBe(200);
    return res.body;
  };
  async function customer(email: string): Promise<string> {
    const res = await t.request('POST', '/api/v1/customers', { key, body: { email } });
    expect(res.status, res.text).toBe(201);
    return res.body.id;
  }
  const earn = (customerId: string, amount: number, times: { expiresAt?: string | null; availableAt?: string } = {}) =>
    t.services.commands.customers.recordPoints(ctx(), customerId, {
      pointsType: 'earn',
      amount,
      applyMultiplier: false,
      description: null,
      reference: null,
      metadata: {},
      ...times,
    });
  const deduct = (customerId: string, amount: number) =>
    t.services.commands.customers.recordPoints(ctx(), customerId, { pointsType: 'deduct', amount, applyMultiplier: false, description: null, reference: null, metadata: {} });
  /** One round at the clock's time; what it did per customer (empty runs left out). */
  async function run() {
    const runs = await t.services.scheduler.runOnce();
    await t.services.projections.catchUp();
    return runs.filter((r) => r.work.length > 0).map((r) => ({ customer: r.customer_id, work: r.work.map((w) => [w.type, w.lot, w.amount, w.at]) }));
  }
  const iso = (ms: number) => new Date(ms).toISOString();

  beforeAll(async () => {
    t = await startTestApp({ clock, config: { webhookAllowPrivate: true }, runDispatcher: false, dispatcher: { now: () => clock.now() } });
    const business = await t.business();
    key = business.private_key;
    businessId = business.business_id;
    receiver = await startReceiver();
    const webhook = await t.request('POST', '/api/v1/webhooks', { key, body: { url: receiver.url, events: ['*'] } });
    expect(webhook.status, webhook.text).toBe(201);
    secret = webhook.body.secret;
  });
  afterAll(async () => {
    await receiver?.close();
    await t?.close();
  });

  it('expires the remainder of a partly spent lot at its expires_at, after a notice expiring_notice_days ahead, never before', async () => {
    at = T0;
    const id = await customer('partly-spent@example.com');
    const credit = await earn(id, 100, { expiresAt: iso(T0 + 10 * DAY) });
    const lot = credit.data.transaction_id as string;
    await deduct(id, 30);

    at = T0 + 3 * DAY - 1;
    expect(await run()).toEqual([]);
    at = T0 + 3 * DAY + 5; // the notice: 7 days ahead
    expect(await run()).toEqual([{ customer: id, work: [['PointsExpiringNotified', lot, 70, iso(T0 + 10 * DAY)]] }]);
    at = T0 + 10 * DAY - 1;
    expect(await run()).toEqual([]);
    at = T0 + 10 * DAY + 1500; // within 2 s of the due time
    expect(await run()).toEqual([{ customer: id, work: [['PointsExpired', lot, 70, iso(T0 + 10 * DAY)]] }]);
    at = T0 + 40 * DAY;
    expect(await run()).toEqual([]);

    expect(await get(`/api/v1/customers/${id}`)).toMatchObject({ points_balance: 0, lifetime_earned: 100, lifetime_redeemed: 30, lifetime_expired: 70, points_pending: 0, next_expiring: null });
    expect(await get(`/api/v1/customers/${id}/lots`)).toEqual([]);
    expect(await get(`/api/v1/customers/${id}/lots?all=true`)).toEqual([
      { transaction_id: lot, amount: 100, remaining: 0, reversed: 0, status: 'expired', available_at: null, expires_at: iso(T0 + 10 * DAY), created_at: iso(T0) },
    ]);
    const ledger = await get(`/api/v1/customers/${id}/transactions`);
    expect(ledger.map((l: any) => [l.type, l.amount, l.balance])).toEqual([
      ['earn', 100, 100],
      ['deduct', 30, 70],
      ['expire', 70, 0],
    ]);
    const summary = await get(`/api/v1/customers/${id}/summary`);
    expect(summary.points).toEqual({ balance: 0, lifetime_earned: 100, lifetime_redeemed: 30, pending: 0, lifetime_expired: 70, next_expiring: null });
    expect(summary.recent_activity[0]).toMatchObject({ type: 'expire', amount: 70 });
  });

  it('releases pending points when they become available; until then they show as pending and are not in the balance', async () => {
    at = T0;
    const id = await customer('pending@example.com');
    const credit = await earn(id, 50, { availableAt: iso(T0 + 2 * DAY), expiresAt: iso(T0 + 20 * DAY) });
    const lot = credit.data.transaction_id as string;
    expect(await get(`/api/v1/customers/${id}`)).toMatchObject({ points_balance: 0, points_pending: 50, next_expiring: { amount: 50, expires_at: iso(T0 + 20 * DAY) } });
    expect(await get(`/api/v1/customers/${id}/lots`)).toMatchObject([{ transaction_id: lot, status: 'pending', remaining: 50, available_at: iso(T0 + 2 * DAY) }]);

    at = T0 + 2 * DAY;
    expect(await run()).toEqual([{ customer: id, work: [['PointsReleased', lot, 50, iso(T0 + 2 * DAY)]] }]);
    expect(await get(`/api/v1/customers/${id}`)).toMatchObject({ points_balance: 50, points_pending: 0 });
    const summary = await get(`/api/v1/customers/${id}/summary`);
    expect(summary.points).toMatchObject({ balance: 50, pending: 0, next_expiring: { amount: 50, expires_at: iso(T0 + 20 * DAY) } });
    expect(summary.recent_activity[0]).toMatchObject({ type: 'release', amount: 50 });
  });

  it('catches up after downtime: every lot that fell due meanwhile, soonest due first, each once', async () => {
    at = T0;
    const ids = [await customer('late-c@example.com'), await customer('late-a@example.com'), await customer('late-b@example.com')];
    // Due (notice) instants: a's first, then b's, then c's.
    await earn(ids[1]!, 10, { expiresAt: iso(T0 + 8 * DAY) });
    await earn(ids[2]!, 10, { expiresAt: iso(T0 + 9 * DAY) });
    await earn(ids[0]!, 10, { expiresAt: iso(T0 + 11 * DAY) });

    at = T0 + 30 * DAY; // the workers were down all that time
    const runs = (await run()).filter((r) => ids.includes(r.customer));
    expect(runs.map((r) => r.customer)).toEqual([ids[1], ids[2], ids[0]]);
    for (const r of runs) expect(r.work.map((w) => w[0])).toEqual(['PointsExpired']); // long past: expired, no notice first
    expect(await run()).toEqual([]);
  });

  it("decides each customer of a round in a turn of the event loop of its own, and appends the round in one transaction", async () => {
    at = T0;
    const ids: string[] = [];
    for (let n = 0; n < 4; n++) {
      const id = await customer(`turns-${n}@example.com`);
      await earn(id, 10, { expiresAt: iso(T0 + 3 * DAY) });
      ids.push(id);
    }
    at = T0 + 4 * DAY;
    // The turns of the event loop, counted by a task that runs once in each.
    let turns = 0;
    let counting = true;
    const count = () => {
      turns++;
      if (counting) setImmediate(count);
    };
    setImmediate(count);
    const decidedIn: number[] = [];
    const applyDue = applyDueThroughCommands(t.services.commands.lifecycle);
    const scheduler = new LifecycleScheduler(t.services.database.db, {
      now: clock.now,
      applyDue: (business, customerId, appendAfter) => {
        if (ids.includes(customerId)) decidedIn.push(turns);
        return applyDue(business, customerId, appendAfter);
      },
    });
    try {
      const runs = await scheduler.runOnce();
      expect(runs.filter((r) => ids.includes(r.customer_id)).map((r) => r.work.map((w) => w.type))).toEqual(ids.map(() => ['PointsExpired']));
    } finally {
      counting = false;
    }
    expect(decidedIn).toHaveLength(4);
    expect(new Set(decidedIn).size).toBe(4);
    // One transaction wrote the four expiries: their rows share the inserting transaction's id.
    const { rows } = await sql<{ transactions: number }>`
      select count(distinct xmin::text)::int as transactions from events
       where type = 'PointsExpired' and stream_id = any(${ids.map((id) => streams.customer(id))})`.execute(t.services.database.db);
    expect(rows[0]!.transactions).toBe(1);
  });

  it('stops at once when asked in the middle of a probe pause', async () => {
    at = T0;
    const id = await customer('stop-probe@example.com');
    await earn(id, 10, { expiresAt: iso(T0 + 3 * DAY) });
    at = T0 + 4 * DAY;
    const applyDue = applyDueThroughCommands(t.services.commands.lifecycle);
    let applied!: () => void;
    const roundApplied = new Promise<void>((resolve) => (applied = resolve));
    let head = 0n;
    const scheduler = new LifecycleScheduler(t.services.database.db, {
      now: clock.now,
      applyDue: async (business, customerId, appendAfter) => {
        const run = await applyDue(business, customerId, appendAfter);
        if (customerId === id) applied();
        return run;
      },
      // Others write 100 events between any two looks: with no reference yet, the round is followed by a probe of two 2 s halves.
      logHead: async () => ({ globalPosition: (head += 100n) }),
      pacing: { probeMs: 4_000 },
    });
    scheduler.start();
    await roundApplied;
    await new Promise((resolve) => setTimeout(resolve, 100));
    const asked = Date.now();
    await scheduler.stop();
    expect(Date.now() - asked).toBeLessThan(1_000);
  });

  it('expires a lot exactly once when a command on the customer races the scheduler (both decide the same due work)', async () => {
    at = T0;
    const id = await customer('race@example.com');
    await earn(id, 40, { expiresAt: iso(T0 + 10 * DAY) });
    await earn(id, 5);
    at = T0 + 11 * DAY;
    // The earn applies the due work first (due-work-first), concurrently with the scheduler's round.
    await Promise.all([run(), earn(id, 1), run()]);
    await t.services.projections.catchUp();
    const events = await t.services.store.readStream(streams.customer(id));
    expect(events.filter((e) => e.type === 'PointsExpired')).toHaveLength(1);
    expect(events.filter((e) => e.type === 'PointsExpiringNotified')).toHaveLength(0);
    expect(await get(`/api/v1/customers/${id}`)).toMatchObject({ points_balance: 6, lifetime_expired: 40 });
  });

  it('signs and delivers points.released, points.expiring, points.expired and tier.downgraded webhooks', async () => {
    at = T0;
    const tier = await t.request('POST', '/api/v1/tiers', { key, body: { name: 'Silver', points_threshold: 100, multiplier: 1 } });
    expect(tier.status, tier.text).toBe(201);
    await t.services.commands.program.changeSettings(ctx(), { tier_qualification: { mode: 'rolling', window_days: 30 } });
    at = T0 + 1000;
    const id = await customer('hooks@example.com');
    await earn(id, 150, { expiresAt: iso(T0 + 40 * DAY) });
    await earn(id, 20, { availableAt: iso(T0 + DAY) });
    for (const day of [1, 33, 40, 41]) {
      at = T0 + day * DAY + 1000;
      await run();
    }
    await t.services.projections.catchUp();
    for (let i = 0; i < 10 && (await t.services.dispatcher.runOnce()) > 0; i++);

    const mine = receiver.received.filter((r) => r.payload?.data?.customer_id === id);
    const types = new Set(mine.map((r) => r.payload.type));
    for (const type of ['points.released', 'points.expiring', 'points.expired', 'tier.downgraded']) expect(types, type).toContain(type);
    // Signed at the injected clock's time: checked against the signature for the timestamp it carries.
    for (const delivery of mine) expect(delivery.headers['webhook-signature']!.split(' ')).toContain(signatureFor(secret, delivery));
    const expiredHook = mine.find((r) => r.payload.type === 'points.expired')!.payload.data;
    expect(expiredHook).toMatchObject({ customer_id: id, amount: 150, expired_at: iso(T0 + 40 * DAY), transaction_id: expect.stringMatching(/^txn_/) });
    const downgraded = mine.find((r) => r.payload.type === 'tier.downgraded')!.payload.data;
    expect(downgraded).toMatchObject({ customer_id: id, previous_tier: { name: 'Silver' }, new_tier: null });
    expect(await get(`/api/v1/customers/${id}`)).toMatchObject({ tier: null });
  });

  it('counts the points needed for the next tier within the rolling window', async () => {
    // The business qualifies on a rolling 30-day window (the test before set it), Silver at 100.
    at = T0 + 100 * DAY;
    const id = await customer('rolling-summary@example.com');
    await earn(id, 60);
    expect((await get(`/api/v1/customers/${id}/summary`)).tier.next).toMatchObject({ name: 'Silver', points_needed: 40 });
    at = T0 + 131 * DAY; // the credit left the window
    expect((await get(`/api/v1/customers/${id}/summary`)).tier.next).toMatchObject({ name: 'Silver', points_needed: 100 });
  });

  it('rebuilds lots, customers and the ledger row for row from what the decider and the scheduler wrote', async () => {
    const tables = async () => {
      const out: Record<string, unknown[]> = {};
      for (const [table, order] of [['lots', 'seq'], ['customers', 'id'], ['ledger_entries', 'seq'], ['tier_changes', 'seq']] as const) {
        const { rows } = await sql<Record<string, unknown>>`select * from ${sql.table(table)} order by ${sql.raw(order)}`.execute(t.services.db);
        out[table] = rows.map(({ seq: _seq, ...row }) => JSON.parse(JSON.stringify(row)));
      }
      return out;
    };
    await t.services.projections.catchUp();
    const live = await tables();
    expect((live.lots as unknown[]).length).toBeGreaterThan(5);
    await rebuildProjection(t.services.database, t.services.store, customersProjector, { batchSize: 7 });
    expect(await tables()).toEqual(live);
  });
});

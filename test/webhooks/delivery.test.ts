import { Webhook } from 'standardwebhooks';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { WebhookDispatcher } from '../../src/webhooks/dispatcher.js';
import { webhookSecrets } from '../../src/webhooks/secrets.js';
import { messageId } from '../../src/webhooks/webhooks-projector.js';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { ISO_MS } from '../support/expectations.js';
import { type Received, type Receiver, type Reply, signatureFor, startReceiver } from '../support/webhook-receiver.js';

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
/** CONTRACT.md §10: the delay before each attempt, counted from the one before (the first at once). */
const SCHEDULE = [0, 5 * SECOND, 5 * MINUTE, 30 * MINUTE, 2 * HOUR, 5 * HOUR, 10 * HOUR, 14 * HOUR, 20 * HOUR, 24 * HOUR];


describe('webhook delivery', () => {
  let t: TestApp;
  /** The dispatcher's clock: tests set it, never wait for time to pass. */
  let clock = new Date();
  const receivers: Receiver[] = [];
  const created: Array<{ key: string; id: string }> = [];
  let emails = 0;

  beforeAll(async () => {
    t = await startTestApp({ config: { webhookAllowPrivate: true }, runDispatcher: false, dispatcher: { now: () => clock } });
  });
  afterAll(() => t.close());
  // The dispatcher claims every due message of the database: retire this test's endpoints so
  // their pending retries never reach a later test's pass.
  afterEach(async () => {
    for (const { key, id } of created.splice(0)) await t.request('DELETE', `/api/v1/webhooks/${id}`, { key });
    await Promise.all(receivers.splice(0).map((r) => r.close()));
  });

  async function receiver(reply?: (n: number, request: Received) => Reply | Promise<Reply>) {
    const r = await startReceiver(reply);
    receivers.push(r);
    return r;
  }

  async function createWebhook(key: string, url: string, events: string[]) {
    const response = await t.request('POST', '/api/v1/webhooks', { key, body: { url, events } });
    expect(response.status, response.text).toBe(201);
    created.push({ key, id: response.body.id });
    return response.body as { id: string; secret: string };
  }

  async function api(key: string, method: string, path: string, body?: unknown) {
    const response = await t.request(method, path, { key, ...(body === undefined ? {} : { body }) });
    expect(response.status, `${method} ${path}: ${response.text}`).toBeLessThan(300);
    return response.body;
  }

  const newCustomer = async (key: string) => (await api(key, 'POST', '/api/v1/customers', { email: `delivery-${++emails}@example.com` })).id as string;
  const transact = (key: string, customerId: string, body: Record<string, unknown>) =>
    api(key, 'POST', `/api/v1/customers/${customerId}/points/transaction`, body);

  async function deliveries(key: string, webhookId: string) {
    return (await api(key, 'GET', `/api/v1/webhooks/${webhookId}/deliveries?limit=200`)) as Array<{
      message_id: string;
      event_type: string;
      attempt: number;
      attempted_at: string;
      status_code: number | null;
      duration_ms: number;
      response_excerpt: string | null;
      error: string | null;
      message_status: string;
      next_attempt_at: string | null;
    }>;
  }

  /** `loyalty_webhook_queue_depth` as /metrics reports it now. */
  async function queueDepth() {
    const metrics = await t.request('GET', '/metrics');
    const depth = /^loyalty_webhook_queue_depth (\d+)$/m.exec(metrics.text)?.[1];
    expect(depth, metrics.text).toBeDefined();
    return Number(depth);
  }

  /** The queue's rows for one endpoint, oldest first (a deleted endpoint has no deliveries list). */
  const messagesOf = (webhookId: string) =>
    t.services.db.selectFrom('webhook_messages').select(['id', 'status', 'attempts']).where('webhook_id', '=', webhookId).orderBy('seq').execute();
  const attemptsOf = async (webhookId: string) =>
    Number((await t.services.db.selectFrom('webhook_attempts').select((eb) => eb.fn.countAll().as('n')).where('webhook_id', '=', webhookId).executeTakeFirstOrThrow()).n);

  /** One dispatcher pass with the clock at `at` (default: the real time now, when every new message is due). */
  async function dispatchAt(at: Date | number = new Date()) {
    clock = new Date(at);
    return t.services.dispatcher.runOnce();
  }

  describe('payloads and signatures', () => {
    it('delivers tier.upgraded with {customer_id, previous_tier, new_tier, lifetime_earned, upgraded_at}, signed per Standard Webhooks', async () => {
      const { private_key: key } = await t.business();
      const silver = await api(key, 'POST', '/api/v1/tiers', { name: 'Silver', points_threshold: 100, multiplier: 1.5, benefits: ['free shipping'] });
      const gold = await api(key, 'POST', '/api/v1/tiers', { name: 'Gold', points_threshold: 500, multiplier: 2, benefits: ['lounge'] });
      const r = await receiver();
      const { id: webhookId, secret } = await createWebhook(key, r.url, ['tier.upgraded']);
      const customerId = await newCustomer(key);

      await transact(key, customerId, { type: 'earn', amount: 150 });
      await dispatchAt();
      await transact(key, customerId, { type: 'earn', amount: 400 });
      await dispatchAt();
      expect(r.types()).toEqual(['tier.upgraded', 'tier.upgraded']);

      const [toSilver, toGold] = r.received.map((delivery) => {
        expect(delivery.headers['content-type']).toMatch(/^application\/json/);
        expect(delivery.headers['webhook-id']).toMatch(/^msg_[A-Za-z0-9_-]{16,}$/);
        expect(delivery.headers['webhook-timestamp']).toMatch(/^\d+$/);
        expect(delivery.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+={0,2}$/);
        // The receiver's check, with the reference implementation.
        const verified = new Webhook(secret).verify(delivery.body, delivery.headers) as any;
        expect(verified).toEqual(delivery.payload);
        return verified;
      });
      // Each message's webhook-id is made from its event and endpoint: the same wherever it is queued.
      const queued = await t.services.db.selectFrom('webhook_messages').select(['id', 'source_event_id']).where('webhook_id', '=', webhookId).execute();
      expect(r.received.map((d) => d.headers['webhook-id']).sort()).toEqual(queued.map((m) => messageId(m.source_event_id!, webhookId)).sort());
      expect(Object.keys(toSilver)).toEqual(expect.arrayContaining(['type', 'timestamp', 'data']));
      expect(toSilver.timestamp).toMatch(ISO_MS);
      expect(toSilver.data).toEqual({
        customer_id: customerId,
        previous_tier: null,
        new_tier: expect.objectContaining({ id: silver.id, name: 'Silver', points_threshold: 100, multiplier: 1.5 }),
        lifetime_earned: 150,
        upgraded_at: expect.stringMatching(ISO_MS),
      });
      expect(toGold.data).toEqual({
        customer_id: customerId,
        previous_tier: expect.objectContaining({ id: silver.id, name: 'Silver' }),
        new_tier: expect.objectContaining({ id: gold.id, name: 'Gold', points_threshold: 500, multiplier: 2 }),
        lifetime_earned: 550,
        upgraded_at: expect.stringMatching(ISO_MS),
      });
      // The customer's tier says the same as the webhook.
      const customer = await api(key, 'GET', `/api/v1/customers/${customerId}`);
      expect(customer.tier).toMatchObject({ id: gold.id, achieved_at: toGold.data.upgraded_at });
    });

    it('signatures do not verify with another secret or a changed body', async () => {
      const { private_key: key } = await t.business();
      const r = await receiver();
      const { secret } = await createWebhook(key, r.url, ['customer.created']);
      const other = await createWebhook(key, r.url, ['points.earned']);
      await newCustomer(key);
      await dispatchAt();
      expect(r.received).toHaveLength(1);
      const [delivery] = r.received;
      expect(() => new Webhook(secret).verify(delivery!.body, delivery!.headers)).not.toThrow();
      expect(() => new Webhook(other.secret).verify(delivery!.body, delivery!.headers)).toThrow();
      expect(() => new Webhook(secret).verify(delivery!.body.replace('customer.created', 'customer.creatEd'), delivery!.headers)).toThrow();
      expect(() => new Webhook(secret).verify(delivery!.body, { ...delivery!.headers, 'webhook-id': 'msg_someoneelse0000000' })).toThrow();
    });
  });

  describe('subscriptions', () => {
    it('sends an endpoint only what it subscribed to, and everything to "*"', async () => {
      const { private_key: key } = await t.business();
      const pointsOnly = await receiver();
      const everything = await receiver();
      const customersAndTiers = await receiver();
      await createWebhook(key, pointsOnly.url, ['points.earned']);
      await createWebhook(key, everything.url, ['*']);
      await createWebhook(key, customersAndTiers.url, ['customer.created', 'tier.upgraded']);

      const customerId = await newCustomer(key);
      await dispatchAt();
      expect(pointsOnly.types()).toEqual([]);
      expect(everything.types()).toEqual(['customer.created']);
      expect(customersAndTiers.types()).toEqual(['customer.created']);

      await transact(key, customerId, { type: 'earn', amount: 10 });
      await transact(key, customerId, { type: 'deduct', amount: 3 });
      await dispatchAt();
      expect(pointsOnly.types()).toEqual(['points.earned']);
      expect(everything.types().sort()).toEqual(['customer.created', 'points.deducted', 'points.earned']);
      expect(customersAndTiers.types()).toEqual(['customer.created']);
      // Each endpoint gets its own message: ids are not shared between endpoints.
      const everythingIds = new Set(everything.received.map((d) => d.headers['webhook-id']));
      for (const d of [...pointsOnly.received, ...customersAndTiers.received]) expect(everythingIds.has(d.headers['webhook-id'])).toBe(false);
    });

    it("never sends one business's events to another business's endpoint", async () => {
      const a = await t.business();
      const b = await t.business();
      const toA = await receiver();
      const toB = await receiver();
      await createWebhook(a.private_key, toA.url, ['*']);
      await createWebhook(b.private_key, toB.url, ['*']);
      await newCustomer(a.private_key);
      await dispatchAt();
      expect(toA.types()).toEqual(['customer.created']);
      expect(toB.types()).toEqual([]);
    });

    it('follows a PATCH of the subscription and of active', async () => {
      const { private_key: key } = await t.business();
      const r = await receiver();
      const { id } = await createWebhook(key, r.url, ['points.earned']);
      const customerId = await newCustomer(key);
      await api(key, 'PATCH', `/api/v1/webhooks/${id}`, { events: ['points.deducted'] });
      await transact(key, customerId, { type: 'earn', amount: 10 });
      await transact(key, customerId, { type: 'deduct', amount: 1 });
      await dispatchAt();
      expect(r.types()).toEqual(['points.deducted']);

      await api(key, 'PATCH', `/api/v1/webhooks/${id}`, { active: false });
      await transact(key, customerId, { type: 'deduct', amount: 1 });
      await dispatchAt();
      expect(r.types()).toEqual(['points.deducted']);

      await api(key, 'PATCH', `/api/v1/webhooks/${id}`, { active: true });
      const txn = await transact(key, customerId, { type: 'deduct', amount: 2 });
      await dispatchAt();
      expect(r.types()).toEqual(['points.deducted', 'points.deducted']);
      expect(r.received[1]!.payload.data).toMatchObject({ transaction_id: txn.id, balance: 6 });
      expect(txn.balance).toBe(6);
    });

    it('produces each of the eight event types from the API call that causes it', async () => {
      const { private_key: key } = await t.business();
      const gold = await api(key, 'POST', '/api/v1/tiers', { name: 'Gold', points_threshold: 1000, multiplier: 1 });
      await api(key, 'POST', '/api/v1/event-types', { name: 'purchase', display_name: 'Purchase', default_points: 5 });
      const reward = await api(key, 'POST', '/api/v1/rewards', { title: 'Mug', points_cost: 50, reward_type: 'physical' });
      const r = await receiver();
      await createWebhook(key, r.url, ['*']);

      /** Runs one API call, delivers, and returns the payloads it caused (sorted by type). */
      const caused = async (call: () => Promise<unknown>) => {
        const before = r.received.length;
        await call();
        await dispatchAt();
        return r.received
          .slice(before)
          .map((d) => d.payload)
          .sort((x, y) => x.type.localeCompare(y.type));
      };

      let customerId = '';
      const created = await caused(async () => (customerId = await newCustomer(key)));
      expect(created).toEqual([{ type: 'customer.created', timestamp: expect.stringMatching(ISO_MS), data: expect.objectContaining({ customer_id: customerId }) }]);

      let txn: any;
      const earned = await caused(async () => (txn = await transact(key, customerId, { type: 'earn', amount: 100, reference: 'order-1' })));
      expect(earned).toEqual([{ type: 'points.earned', timestamp: expect.any(String), data: expect.objectContaining({ customer_id: customerId, transaction_id: txn.id, amount: 100, balance: 100 }) }]);

      const deducted = await caused(async () => (txn = await transact(key, customerId, { type: 'deduct', amount: 30 })));
      expect(deducted).toEqual([{ type: 'points.deducted', timestamp: expect.any(String), data: expect.objectContaining({ customer_id: customerId, transaction_id: txn.id, balance: 70 }) }]);

      const adjusted = await caused(async () => (txn = await transact(key, customerId, { type: 'adjust', amount: -5 })));
      expect(adjusted).toEqual([{ type: 'points.adjusted', timestamp: expect.any(String), data: expect.objectContaining({ customer_id: customerId, transaction_id: txn.id, amount: -5, balance: 65 }) }]);

      const upgraded = await caused(() => transact(key, customerId, { type: 'earn', amount: 1000 }));
      expect(upgraded.map((p) => p.type)).toEqual(['points.earned', 'tier.upgraded']);
      expect(upgraded[1].data).toMatchObject({ customer_id: customerId, new_tier: { id: gold.id }, lifetime_earned: 1095 }); // 100 − 5 (adjust) + 1000

      let event: any;
      const recorded = await caused(async () => (event = await api(key, 'POST', '/api/v1/events', { customer_id: customerId, event_type: 'purchase', properties: { total: 12 }, reference: 'evt-1' })));
      expect(recorded).toEqual([{ type: 'event.recorded', timestamp: expect.any(String), data: expect.objectContaining({ customer_id: customerId, event_id: event.id, event_type: 'purchase', points_awarded: 5 }) }]);

      let redemption: any;
      const redeemed = await caused(async () => (redemption = await api(key, 'POST', `/api/v1/customers/${customerId}/redemptions`, { reward_id: reward.id })));
      expect(redeemed).toEqual([{ type: 'reward.redeemed', timestamp: expect.any(String), data: expect.objectContaining({ customer_id: customerId, redemption_id: redemption.id, reward_id: reward.id, points_cost: 50 }) }]);

      const cancelled = await caused(() => api(key, 'POST', `/api/v1/customers/${customerId}/redemptions/${redemption.id}/cancel`));
      expect(cancelled).toEqual([{ type: 'redemption.cancelled', timestamp: expect.any(String), data: expect.objectContaining({ customer_id: customerId, redemption_id: redemption.id, reward_id: reward.id, points_cost: 50 }) }]);

      // Reads and configuration changes announce nothing.
      const quiet = await caused(async () => {
        await api(key, 'GET', `/api/v1/customers/${customerId}/summary`);
        await api(key, 'PATCH', `/api/v1/customers/${customerId}`, { first_name: 'Ada' });
        await api(key, 'POST', '/api/v1/rewards', { title: 'Pen', points_cost: 5, reward_type: 'physical' });
      });
      expect(quiet).toEqual([]);
      expect(new Set(r.types())).toEqual(
        new Set(['customer.created', 'points.earned', 'points.deducted', 'points.adjusted', 'tier.upgraded', 'event.recorded', 'reward.redeemed', 'redemption.cancelled']),
      );
    });
  });

  describe('retries', () => {
    it('retries a failing receiver on the schedule with one webhook-id and a fresh timestamp and signature per attempt', async () => {
      const { private_key: key } = await t.business();
      const r = await receiver((n) => (n <= 2 ? { status: 500, body: `boom ${n}` } : { status: 200, body: 'finally' }));
      const { id, secret } = await createWebhook(key, r.url, ['customer.created']);
      await newCustomer(key);

      const first = Date.now();
      await dispatchAt(first);
      expect(r.received).toHaveLength(1);
      let log = await deliveries(key, id);
      expect(log).toMatchObject([{ attempt: 1, status_code: 500, response_excerpt: 'boom 1', message_status: 'pending' }]);
      expect(log[0]!.next_attempt_at).toBe(new Date(first + 5 * SECOND).toISOString());

      // Not a millisecond early.
      await dispatchAt(first + 5 * SECOND - 1);
      expect(r.received).toHaveLength(1);
      await dispatchAt(first + 5 * SECOND);
      expect(r.received).toHaveLength(2);
      log = await deliveries(key, id);
      expect(log.at(-1)).toMatchObject({ attempt: 2, status_code: 500, message_status: 'pending' });
      expect(log.at(-1)!.next_attempt_at).toBe(new Date(first + 5 * SECOND + 5 * MINUTE).toISOString());

      await dispatchAt(first + 5 * SECOND + 5 * MINUTE - 1);
      expect(r.received).toHaveLength(2);
      await dispatchAt(first + 5 * SECOND + 5 * MINUTE);
      expect(r.received).toHaveLength(3);
      log = await deliveries(key, id);
      expect(log.map((d) => [d.attempt, d.status_code])).toEqual([
        [1, 500],
        [2, 500],
        [3, 200],
      ]);
      expect(log.every((d) => d.message_status === 'delivered' && d.next_attempt_at === null)).toBe(true);
      expect(log.map((d) => d.attempted_at)).toEqual([first, first + 5 * SECOND, first + 5 * SECOND + 5 * MINUTE].map((ms) => new Date(ms).toISOString()));

      // One message, three deliveries: the same webhook-id and body, a new timestamp and signature each time.
      const ids = new Set(r.received.map((d) => d.headers['webhook-id']));
      expect(ids).toEqual(new Set([log[0]!.message_id]));
      expect(new Set(r.received.map((d) => d.body)).size).toBe(1);
      expect(r.received.map((d) => Number(d.headers['webhook-timestamp']))).toEqual(
        [first, first + 5 * SECOND, first + 5 * SECOND + 5 * MINUTE].map((ms) => Math.floor(ms / 1000)),
      );
      expect(new Set(r.received.map((d) => d.headers['webhook-signature'])).size).toBe(3);
      // The first two are within the verifier's 5-minute tolerance of the real clock; the third is checked against the reference signer.
      for (const d of r.received.slice(0, 2)) expect(new Webhook(secret).verify(d.body, d.headers)).toMatchObject({ type: 'customer.created' });
      for (const d of r.received) expect(d.headers['webhook-signature']).toBe(signatureFor(secret, d));

      // Delivered: nothing more, however late.
      await dispatchAt(first + 7 * 24 * HOUR);
      expect(r.received).toHaveLength(3);
    });

    it('makes ten attempts, each at its scheduled time, then marks the message failed and stops', async () => {
      const { private_key: key } = await t.business();
      const r = await receiver(() => ({ status: 503, body: 'down' }));
      const { id } = await createWebhook(key, r.url, ['customer.created']);
      await newCustomer(key);

      let at = Date.now();
      const attemptTimes: number[] = [];
      for (let attempt = 1; attempt <= 10; attempt++) {
        at += SCHEDULE[attempt - 1]!;
        if (attempt > 1) {
          await dispatchAt(at - 1);
          expect(r.received, `attempt ${attempt} must not come early`).toHaveLength(attempt - 1);
        }
        await dispatchAt(at);
        expect(r.received, `attempt ${attempt} is due`).toHaveLength(attempt);
        attemptTimes.push(at);
        const last = (await deliveries(key, id)).at(-1)!;
        expect(last).toMatchObject({ attempt, status_code: 503, response_excerpt: 'down', error: null });
        if (attempt < 10) {
          expect(last.message_status).toBe('pending');
          expect(last.next_attempt_at).toBe(new Date(at + SCHEDULE[attempt]!).toISOString());
        }
      }

      const log = await deliveries(key, id);
      expect(log).toHaveLength(10);
      expect(log.map((d) => d.attempt)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
      expect(log.map((d) => d.attempted_at)).toEqual(attemptTimes.map((ms) => new Date(ms).toISOString()));
      expect(new Set(log.map((d) => d.message_id)).size).toBe(1);
      expect(log.every((d) => d.message_status === 'failed' && d.next_attempt_at === null)).toBe(true);
      expect(new Set(r.received.map((d) => d.headers['webhook-id'])).size).toBe(1);

      // Failed for good: no eleventh attempt, not even a month later.
      await dispatchAt(at + 24 * HOUR);
      await dispatchAt(at + 30 * 24 * HOUR);
      expect(r.received).toHaveLength(10);
      expect(await deliveries(key, id)).toHaveLength(10);
    });

    it('keeps other messages flowing while one is being retried', async () => {
      const { private_key: key } = await t.business();
      const failing = await receiver(() => ({ status: 500 }));
      const healthy = await receiver();
      await createWebhook(key, failing.url, ['customer.created']);
      await createWebhook(key, healthy.url, ['customer.created']);
      await newCustomer(key);
      await dispatchAt();
      await newCustomer(key);
      await dispatchAt();
      expect(healthy.received).toHaveLength(2);
      expect(failing.received).toHaveLength(2);
      expect(new Set(failing.received.map((d) => d.headers['webhook-id'])).size).toBe(2);
    });

    it('410 Gone disables the endpoint, fails the message, and nothing more is delivered to it', async () => {
      const { private_key: key } = await t.business();
      const r = await receiver(() => ({ status: 410, body: 'gone' }));
      const { id } = await createWebhook(key, r.url, ['*']);
      const customerId = await newCustomer(key);
      const start = Date.now();
      await dispatchAt(start);
      expect(r.received).toHaveLength(1);

      const webhook = await api(key, 'GET', `/api/v1/webhooks/${id}`);
      expect(webhook).toMatchObject({ id, active: false, disabled_reason: expect.stringMatching(/410/), deleted_at: null });
      expect(await deliveries(key, id)).toMatchObject([{ attempt: 1, status_code: 410, message_status: 'failed', next_attempt_at: null }]);

      await transact(key, customerId, { type: 'earn', amount: 10 });
      expect((await t.request('POST', `/api/v1/webhooks/${id}/test`, { key })).status).toBe(409); // disabled
      for (const delay of SCHEDULE) await dispatchAt(start + delay + SECOND);
      await dispatchAt(start + 7 * 24 * HOUR);
      expect(r.received).toHaveLength(1);
      expect(await deliveries(key, id)).toHaveLength(1);
    });

    it('does not follow redirects: a 302 is a failed attempt recorded with its status', async () => {
      const { private_key: key } = await t.business();
      const target = await receiver();
      const r = await receiver(() => ({ status: 302, headers: { location: target.url }, body: 'moved' }));
      const { id } = await createWebhook(key, r.url, ['customer.created']);
      await newCustomer(key);
      const start = Date.now();
      await dispatchAt(start);
      expect(r.received).toHaveLength(1);
      expect(target.received).toEqual([]);
      const [attempt] = await deliveries(key, id);
      expect(attempt).toMatchObject({ attempt: 1, status_code: 302, message_status: 'pending', next_attempt_at: new Date(start + 5 * SECOND).toISOString() });

      // The retry is another attempt at the endpoint's own URL.
      await dispatchAt(start + 5 * SECOND);
      expect(r.received).toHaveLength(2);
      expect(target.received).toEqual([]);
    });

    /** A dispatcher on the test clock that gives up on a receiver after 300 ms (standing in for the 15 s timeout). */
    const impatientDispatcher = () =>
      new WebhookDispatcher(t.services.db, { secrets: webhookSecrets(t.services.db), allowPrivate: true, onGone: async () => {}, now: () => clock, timeoutMs: 300 });

    it('times out a receiver that never answers and records the attempt as "timed out", to retry later', async () => {
      const { private_key: key } = await t.business();
      const r = await receiver(() => 'hang');
      const { id } = await createWebhook(key, r.url, ['customer.created']);
      await newCustomer(key);
      const impatient = impatientDispatcher();
      const start = Date.now();
      clock = new Date(start);
      expect(await impatient.runOnce()).toBeGreaterThanOrEqual(1);
      expect(r.received).toHaveLength(1);
      const [attempt] = await deliveries(key, id);
      expect(attempt).toMatchObject({
        attempt: 1,
        status_code: null,
        response_excerpt: null,
        error: 'timed out',
        message_status: 'pending',
        next_attempt_at: new Date(start + 5 * SECOND).toISOString(),
      });
      expect(attempt!.duration_ms).toBeGreaterThanOrEqual(250);
    });

    it('takes over a message claimed by a process that is gone at once, and leaves one claimed by a live process alone until its lease ends', async () => {
      const { private_key: key } = await t.business();
      const r = await receiver();
      const { id } = await createWebhook(key, r.url, ['customer.created']);
      await newCustomer(key);
      const [message] = await messagesOf(id);
      const start = Date.now();
      const claimedBy = (holder: string) =>
        t.services.db
          .updateTable('webhook_messages')
          .set({ locked_until: new Date(start + 10 * MINUTE), holder })
          .where('id', '=', message!.id)
          .execute();

      // Held by a live process (this one's mark): left alone until its lease runs out.
      await claimedBy(t.services.processMark.id);
      expect(await dispatchAt(start)).toBe(0);
      expect(r.received).toHaveLength(0);

      // Held by a process whose mark no session holds (it died): delivered now, lease or not.
      await claimedBy('4242424242');
      expect(await dispatchAt(start)).toBe(1);
      expect(r.received).toHaveLength(1);
      expect((await messagesOf(id))[0]!.status).toBe('delivered');
    });

    it('counts the next attempt from the end of a timed-out attempt, not from its start', async () => {
      const { private_key: key } = await t.business();
      let start = 0;
      const TIMEOUT = 15 * SECOND;
      // The receiver never answers; while it hangs, the dispatcher's clock moves on by the 15 s a
      // production timeout takes (the real timeout here is 300 ms: no test waits 15 s).
      const r = await receiver(() => {
        clock = new Date(start + TIMEOUT);
        return 'hang';
      });
      const { id } = await createWebhook(key, r.url, ['customer.created']);
      await newCustomer(key);
      const impatient = impatientDispatcher();
      start = Date.now();
      clock = new Date(start);
      expect(await impatient.runOnce()).toBe(1);
      const [attempt] = await deliveries(key, id);
      expect(attempt).toMatchObject({ attempt: 1, error: 'timed out', message_status: 'pending' });
      expect(attempt!.attempted_at).toBe(new Date(start).toISOString());
      expect(attempt!.next_attempt_at).toBe(new Date(start + TIMEOUT + 5 * SECOND).toISOString());
      expect(Date.parse(attempt!.next_attempt_at!)).toBeGreaterThan(start + TIMEOUT);

      // Not due at start + 5 s, when it would have been with the schedule counted from the start.
      clock = new Date(start + 5 * SECOND);
      expect(await impatient.runOnce()).toBe(0);
      expect(r.received).toHaveLength(1);
    });

    it('records a refused connection as a failed attempt with its error, and retries it', async () => {
      const { private_key: key } = await t.business();
      const closed = await receiver();
      const url = closed.url;
      await closed.close(); // nobody listens on that port now
      const { id } = await createWebhook(key, url, ['customer.created']);
      await newCustomer(key);
      const start = Date.now();
      await dispatchAt(start);
      const [attempt] = await deliveries(key, id);
      expect(attempt).toMatchObject({ attempt: 1, status_code: null, response_excerpt: null, error: expect.any(String), message_status: 'pending' });
      expect(attempt!.error).not.toBe('');
      expect(attempt!.next_attempt_at).toBe(new Date(start + 5 * SECOND).toISOString());
    });

    it('checks the address again before sending: a dispatcher without the private-address override sends nothing to 127.0.0.1', async () => {
      const { private_key: key } = await t.business();
      const r = await receiver();
      const { id } = await createWebhook(key, r.url, ['customer.created']);
      await newCustomer(key);
      const strict = new WebhookDispatcher(t.services.db, {
        secrets: webhookSecrets(t.services.db),
        allowPrivate: false,
        onGone: async () => {},
        now: () => clock,
      });
      const start = Date.now();
      clock = new Date(start);
      expect(await strict.runOnce()).toBeGreaterThanOrEqual(1);
      expect(r.received).toEqual([]);
      const [attempt] = await deliveries(key, id);
      expect(attempt).toMatchObject({ attempt: 1, status_code: null, response_excerpt: null, message_status: 'pending' });
      expect(attempt!.error).toEqual(expect.any(String));
      expect(attempt!.error).not.toBe('');
    });

    it('records every attempt with its status code, duration and the start of the response body', async () => {
      const { private_key: key } = await t.business();
      const long = `${'x'.repeat(300)}${'y'.repeat(5000)}`;
      const r = await receiver((n) => (n === 1 ? { status: 422, body: 'unprocessable: missing field', delayMs: 30 } : { status: 202, body: long }));
      const { id } = await createWebhook(key, r.url, ['customer.created']);
      await newCustomer(key);
      const start = Date.now();
      await dispatchAt(start);
      await dispatchAt(start + 5 * SECOND);
      const log = await deliveries(key, id);
      expect(log).toHaveLength(2);
      expect(log[0]).toMatchObject({ event_type: 'customer.created', attempt: 1, status_code: 422, response_excerpt: 'unprocessable: missing field', error: null });
      expect(log[0]!.duration_ms).toBeGreaterThanOrEqual(20);
      expect(log[1]).toMatchObject({ event_type: 'customer.created', attempt: 2, status_code: 202, error: null, message_status: 'delivered' });
      expect(Number.isInteger(log[1]!.duration_ms) && log[1]!.duration_ms >= 0).toBe(true);
      // An excerpt: the beginning of the body, not all of a large one.
      const excerpt = log[1]!.response_excerpt!;
      expect(excerpt.length).toBeGreaterThanOrEqual(300);
      expect(excerpt.length).toBeLessThan(long.length);
      expect(long.startsWith(excerpt)).toBe(true);
    });
  });

  describe('deleted and disabled endpoints', () => {
    // Every test starts with an empty queue: afterEach deletes the endpoints of the test before.
    it('cancels the queued messages of a deleted endpoint: none is sent, and they leave the queue and its gauge', async () => {
      const { private_key: key } = await t.business();
      const r = await receiver();
      const { id } = await createWebhook(key, r.url, ['*']);
      expect(await queueDepth()).toBe(0);
      const customerId = await newCustomer(key);
      await transact(key, customerId, { type: 'earn', amount: 10 });
      expect((await messagesOf(id)).map((m) => m.status)).toEqual(['pending', 'pending']);
      expect(await queueDepth()).toBe(2);

      await api(key, 'DELETE', `/api/v1/webhooks/${id}`);
      expect((await messagesOf(id)).map((m) => m.status)).toEqual(['cancelled', 'cancelled']);
      expect(await queueDepth()).toBe(0);

      const start = Date.now();
      for (const at of [start, start + 5 * SECOND, start + 48 * HOUR]) await dispatchAt(at);
      expect(r.received).toEqual([]);
      expect(await attemptsOf(id)).toBe(0);
      expect((await messagesOf(id)).map((m) => m.status)).toEqual(['cancelled', 'cancelled']);
    });

    it('a delete while messages wait for a retry cancels them: no further attempt, the gauge back to 0', async () => {
      const { private_key: key } = await t.business();
      const r = await receiver(() => ({ status: 500, body: 'down' }));
      const { id } = await createWebhook(key, r.url, ['customer.created']);
      for (let i = 0; i < 3; i++) await newCustomer(key);
      const start = Date.now();
      await dispatchAt(start);
      expect(r.received).toHaveLength(3);
      const waiting = await deliveries(key, id);
      expect(waiting.map((d) => [d.attempt, d.message_status, d.next_attempt_at])).toEqual(
        Array.from({ length: 3 }, () => [1, 'pending', new Date(start + 5 * SECOND).toISOString()]),
      );
      expect(await queueDepth()).toBe(3);

      await api(key, 'DELETE', `/api/v1/webhooks/${id}`);
      expect((await messagesOf(id)).map((m) => [m.status, m.attempts])).toEqual(Array.from({ length: 3 }, () => ['cancelled', 1]));
      expect(await queueDepth()).toBe(0);

      for (const delay of SCHEDULE) await dispatchAt(start + delay + SECOND);
      await dispatchAt(start + 7 * 24 * HOUR);
      expect(r.received).toHaveLength(3);
      expect(await attemptsOf(id)).toBe(3);
    });

    it('disabling (PATCH active: false) cancels waiting messages, the deliveries list says so, and enabling again does not revive them', async () => {
      const { private_key: key } = await t.business();
      const r = await receiver((n) => (n === 1 ? { status: 500 } : { status: 200 }));
      const { id } = await createWebhook(key, r.url, ['customer.created']);
      await newCustomer(key);
      const start = Date.now();
      await dispatchAt(start);
      expect(await queueDepth()).toBe(1);

      await api(key, 'PATCH', `/api/v1/webhooks/${id}`, { active: false });
      expect(await deliveries(key, id)).toMatchObject([{ attempt: 1, status_code: 500, message_status: 'cancelled', next_attempt_at: null }]);
      expect(await queueDepth()).toBe(0);
      await dispatchAt(start + 5 * SECOND);
      expect(r.received).toHaveLength(1);

      // Enabled again: what was cancelled stays cancelled; what happens from now on is delivered.
      await api(key, 'PATCH', `/api/v1/webhooks/${id}`, { active: true });
      await dispatchAt(start + 10 * SECOND);
      expect(r.received).toHaveLength(1);
      await newCustomer(key);
      await dispatchAt();
      expect(r.received).toHaveLength(2);
      expect((await deliveries(key, id)).map((d) => d.message_status)).toEqual(['cancelled', 'delivered']);
      expect(await queueDepth()).toBe(0);
    });

    it('410 Gone cancels the messages of the endpoint it disables that were still waiting', async () => {
      const { private_key: key } = await t.business();
      let gone = false;
      const r = await receiver(() => (gone ? { status: 410 } : { status: 500 }));
      const { id } = await createWebhook(key, r.url, ['customer.created']);
      await newCustomer(key);
      const start = Date.now();
      await dispatchAt(start); // the first message now waits for its retry at start + 5 s
      await newCustomer(key);
      gone = true;
      await dispatchAt(start + SECOND); // only the second is due: it meets the 410
      expect(r.received).toHaveLength(2);
      expect(await api(key, 'GET', `/api/v1/webhooks/${id}`)).toMatchObject({ active: false });
      expect((await deliveries(key, id)).map((d) => [d.status_code, d.message_status])).toEqual([
        [500, 'cancelled'],
        [410, 'failed'],
      ]);
      expect(await queueDepth()).toBe(0);
      await dispatchAt(start + 7 * 24 * HOUR);
      expect(r.received).toHaveLength(2);
    });

    it('does not attempt a message queued for an endpoint already disabled (a race with the test send), and cancels it', async () => {
      const { business_id: businessId, private_key: key } = await t.business();
      const r = await receiver();
      const { id } = await createWebhook(key, r.url, ['*']);
      await api(key, 'PATCH', `/api/v1/webhooks/${id}`, { active: false });
      // As if POST /test had checked the endpoint just before the disable was projected.
      await t.services.queries.webhooks.enqueueTest(businessId, id, 'msg_raceraceraceracerace', new Date());
      expect(await queueDepth()).toBe(1);
      await dispatchAt();
      expect(r.received).toEqual([]);
      expect(await messagesOf(id)).toEqual([{ id: 'msg_raceraceraceracerace', status: 'cancelled', attempts: 0 }]);
      expect(await queueDepth()).toBe(0);
    });

    it('a delete while an attempt is in flight: the failed attempt is recorded, the message stays cancelled', async () => {
      const { private_key: key } = await t.business();
      let deleting: Promise<unknown> | undefined;
      const r = await receiver(async () => {
        deleting = api(key, 'DELETE', `/api/v1/webhooks/${id}`);
        await deleting;
        return { status: 500 };
      });
      const { id } = await createWebhook(key, r.url, ['customer.created']);
      await newCustomer(key);
      const start = Date.now();
      await dispatchAt(start);
      await deleting;
      expect(r.received).toHaveLength(1);
      expect(await messagesOf(id)).toMatchObject([{ status: 'cancelled', attempts: 1 }]);
      expect(await attemptsOf(id)).toBe(1);
      expect(await queueDepth()).toBe(0);
      await dispatchAt(start + 5 * SECOND);
      expect(r.received).toHaveLength(1);
    });
  });

  describe('several dispatchers', () => {
    it('two dispatchers on one database send each message once per attempt', async () => {
      const { private_key: key } = await t.business();
      // Every message fails once, then succeeds; slow answers keep both dispatchers busy at once.
      const seen = new Map<string, number>();
      const r = await receiver((_n, request) => {
        const id = request.headers['webhook-id']!;
        seen.set(id, (seen.get(id) ?? 0) + 1);
        return { status: seen.get(id) === 1 ? 500 : 200, delayMs: 15 };
      });
      const { id } = await createWebhook(key, r.url, ['customer.created', 'points.earned']);
      const customers = 12;
      const ids = await Promise.all(Array.from({ length: customers }, () => newCustomer(key)));
      await Promise.all(ids.map((c) => transact(key, c, { type: 'earn', amount: 1 })));
      const messages = customers * 2;

      const other = new WebhookDispatcher(t.services.db, {
        secrets: webhookSecrets(t.services.db),
        allowPrivate: true,
        onGone: async () => {},
        now: () => clock,
        batchSize: 5,
      });
      /** Both dispatchers, concurrently, until neither finds anything due; returns how many each attempted. */
      const drain = async (at: number) => {
        clock = new Date(at);
        let [mine, theirs] = [0, 0];
        for (;;) {
          const [a, b] = await Promise.all([t.services.dispatcher.runOnce(), other.runOnce()]);
          mine += a;
          theirs += b;
          if (a + b === 0) return [mine, theirs] as const;
        }
      };

      const start = Date.now();
      const firstRound = await drain(start);
      expect(firstRound[0] + firstRound[1]).toBe(messages);
      expect(r.received).toHaveLength(messages);
      expect([...seen.values()].every((n) => n === 1)).toBe(true);
      expect(seen.size).toBe(messages);

      const secondRound = await drain(start + 5 * SECOND);
      expect(secondRound[0] + secondRound[1]).toBe(messages);
      expect(r.received).toHaveLength(2 * messages);
      expect([...seen.values()].every((n) => n === 2)).toBe(true);

      const log = await deliveries(key, id);
      expect(log).toHaveLength(2 * messages);
      const attemptsPerMessage = new Map<string, number[]>();
      for (const d of log) attemptsPerMessage.set(d.message_id, [...(attemptsPerMessage.get(d.message_id) ?? []), d.attempt]);
      expect([...attemptsPerMessage.values()].every((a) => a.sort().join() === '1,2')).toBe(true);
      expect(log.every((d) => d.message_status === 'delivered')).toBe(true);

      // Nothing left for anyone.
      expect(await drain(start + 7 * 24 * HOUR)).toEqual([0, 0]);
      expect(r.received).toHaveLength(2 * messages);
    });
  });
});

import { Webhook } from 'standardwebhooks';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp, type TestResponse } from '../support/test-app.js';
import { ISO_MS, expectError } from '../support/expectations.js';
import { type Received, type Receiver, signatureFor, startReceiver } from '../support/webhook-receiver.js';

const WEBHOOK_ID = /^whk_[A-Za-z0-9_-]{16,}$/;
const MESSAGE_ID = /^msg_[A-Za-z0-9_-]{16,}$/;
const ATTEMPT_ID = /^att_[A-Za-z0-9_-]{16,}$/;
const SECRET = /^whsec_[A-Za-z0-9+/]+={0,2}$/;
const HOUR = 60 * 60 * 1000;
const EVENT_NAMES = [
  'tier.upgraded',
  'customer.created',
  'points.earned',
  'points.deducted',
  'points.adjusted',
  'event.recorded',
  'reward.redeemed',
  'redemption.cancelled',
];

/** The signatures of a `webhook-signature` header (`v1,<base64>` separated by spaces). */
const signaturesOf = (received: Received) => received.headers['webhook-signature']!.split(' ');


describe('webhooks API', () => {
  /** LOYALTY_WEBHOOK_ALLOW_PRIVATE=1: local receivers; the dispatcher is driven by hand with an injected clock. */
  let t: TestApp;
  /** The production default: no private addresses, no plain http. */
  let strict: TestApp;
  let clock = new Date();
  const receivers: Receiver[] = [];

  beforeAll(async () => {
    [t, strict] = await Promise.all([
      startTestApp({ config: { webhookAllowPrivate: true }, runDispatcher: false, dispatcher: { now: () => clock } }),
      startTestApp({ config: { webhookAllowPrivate: false }, runDispatcher: false }),
    ]);
  });
  afterAll(async () => {
    await Promise.all([t?.close(), strict?.close()]);
  });
  afterEach(async () => {
    await Promise.all(receivers.splice(0).map((r) => r.close()));
  });

  async function receiver() {
    const r = await startReceiver();
    receivers.push(r);
    return r;
  }


  function expectValidationError(response: TestResponse, path: string) {
    expectError(response, 400, 'validation_error');
    expect(response.body.details, response.text).toEqual(expect.arrayContaining([expect.objectContaining({ path: expect.stringMatching(new RegExp(`^${path}`)) })]));
  }

  async function createWebhook(key: string, body: Record<string, unknown>, app: TestApp = t) {
    const response = await app.request('POST', '/api/v1/webhooks', { key, body });
    expect(response.status, response.text).toBe(201);
    return response.body as { id: string; secret: string; url: string; events: string[] };
  }

  async function getWebhook(key: string, id: string, app: TestApp = t) {
    const response = await app.request('GET', `/api/v1/webhooks/${id}`, { key });
    expect(response.status, response.text).toBe(200);
    return response.body;
  }

  async function deliveries(key: string, id: string) {
    const response = await t.request('GET', `/api/v1/webhooks/${id}/deliveries?limit=200`, { key });
    expect(response.status, response.text).toBe(200);
    return response.body as any[];
  }

  async function restrictedKey(key: string, permissions: string[]) {
    const response = await t.request('POST', '/api/v1/keys', { key, body: { type: 'private', permissions } });
    expect(response.status, response.text).toBe(201);
    return response.body.key as string;
  }

  /** Queues a webhook.test message and returns its id. */
  async function sendTest(key: string, id: string) {
    const response = await t.request('POST', `/api/v1/webhooks/${id}/test`, { key });
    expect(response.status, response.text).toBe(201);
    return response.body.id as string;
  }

  /** One dispatcher pass with the clock at `at` (default: now). */
  async function dispatch(at = new Date()) {
    clock = at;
    return t.services.dispatcher.runOnce();
  }

  describe('creating', () => {
    it('creates an endpoint and shows its whsec_ signing secret once, in the 201', async () => {
      const { private_key: key } = await t.business();
      const r = await receiver();
      const response = await t.request('POST', '/api/v1/webhooks', {
        key,
        body: { url: r.url, events: ['tier.upgraded', 'points.earned'], description: 'CRM sync' },
      });
      expect(response.status, response.text).toBe(201);
      expect(response.body).toEqual({
        id: expect.stringMatching(WEBHOOK_ID),
        url: r.url,
        events: ['tier.upgraded', 'points.earned'],
        description: 'CRM sync',
        active: true,
        disabled_reason: null,
        created_at: expect.stringMatching(ISO_MS),
        updated_at: expect.stringMatching(ISO_MS),
        deleted_at: null,
        secret: expect.stringMatching(SECRET),
      });
      // A Standard Webhooks secret: base64 of enough random bytes to key HMAC-SHA256.
      expect(Buffer.from(response.body.secret.slice('whsec_'.length), 'base64').length).toBeGreaterThanOrEqual(24);
    });

    it('gives every endpoint its own secret', async () => {
      const { private_key: key } = await t.business();
      const r = await receiver();
      const a = await createWebhook(key, { url: r.url, events: ['*'] });
      const b = await createWebhook(key, { url: r.url, events: ['*'] });
      expect(a.id).not.toBe(b.id);
      expect(a.secret).not.toBe(b.secret);
    });

    it('never shows the secret again: not in GET, the list, PATCH, deliveries or DELETE', async () => {
      const { private_key: key } = await t.business();
      const r = await receiver();
      const { id, secret } = await createWebhook(key, { url: r.url, events: ['*'] });
      const bare = secret.slice('whsec_'.length);
      await sendTest(key, id);
      await dispatch();
      const responses = [
        await t.request('GET', `/api/v1/webhooks/${id}`, { key }),
        await t.request('GET', '/api/v1/webhooks', { key }),
        await t.request('PATCH', `/api/v1/webhooks/${id}`, { key, body: { description: 'changed' } }),
        await t.request('GET', `/api/v1/webhooks/${id}/deliveries`, { key }),
        await t.request('DELETE', `/api/v1/webhooks/${id}`, { key }),
      ];
      for (const response of responses) {
        expect(response.status, response.text).toBe(200);
        expect(response.text).not.toContain(bare);
        expect(response.text).not.toContain('"secret"');
      }
    });

    it('accepts ["*"] and every event name of the contract', async () => {
      const { private_key: key } = await t.business();
      const r = await receiver();
      expect((await createWebhook(key, { url: r.url, events: ['*'] })).events).toEqual(['*']);
      expect((await createWebhook(key, { url: r.url, events: EVENT_NAMES })).events).toEqual(EVENT_NAMES);
      for (const name of EVENT_NAMES) expect((await createWebhook(key, { url: r.url, events: [name] })).events).toEqual([name]);
    });

    it('refuses an unknown event name, an empty list and a missing list (400 validation_error)', async () => {
      const { private_key: key } = await t.business();
      const r = await receiver();
      expectValidationError(await t.request('POST', '/api/v1/webhooks', { key, body: { url: r.url, events: ['points.stolen'] } }), 'events');
      expectValidationError(await t.request('POST', '/api/v1/webhooks', { key, body: { url: r.url, events: ['points.earned', 'nope'] } }), 'events');
      expectValidationError(await t.request('POST', '/api/v1/webhooks', { key, body: { url: r.url, events: ['PointsEarned'] } }), 'events');
      expectValidationError(await t.request('POST', '/api/v1/webhooks', { key, body: { url: r.url, events: [] } }), 'events');
      expectValidationError(await t.request('POST', '/api/v1/webhooks', { key, body: { url: r.url, events: '*' } }), 'events');
      expectValidationError(await t.request('POST', '/api/v1/webhooks', { key, body: { url: r.url } }), 'events');
      expect(await t.request('GET', '/api/v1/webhooks', { key }).then((l) => l.body)).toEqual([]);
    });

    it('refuses a missing or malformed url and unknown fields', async () => {
      const { private_key: key } = await t.business();
      const r = await receiver();
      expectValidationError(await t.request('POST', '/api/v1/webhooks', { key, body: { events: ['*'] } }), 'url');
      expectValidationError(await t.request('POST', '/api/v1/webhooks', { key, body: { url: 'not a url', events: ['*'] } }), 'url');
      expectValidationError(await t.request('POST', '/api/v1/webhooks', { key, body: { url: 42, events: ['*'] } }), 'url');
      expectError(await t.request('POST', '/api/v1/webhooks', { key, body: { url: r.url, events: ['*'], secret: 'whsec_mine' } }), 400, 'validation_error');
      expect(await t.request('GET', '/api/v1/webhooks', { key }).then((l) => l.body)).toEqual([]);
    });

    it('accepts plain http to 127.0.0.1 when LOYALTY_WEBHOOK_ALLOW_PRIVATE is set', async () => {
      const { private_key: key } = await t.business();
      const response = await t.request('POST', '/api/v1/webhooks', { key, body: { url: 'http://127.0.0.1:9/hooks', events: ['*'] } });
      expect(response.status, response.text).toBe(201);
      expect(response.body.url).toBe('http://127.0.0.1:9/hooks');
    });
  });

  describe('reading', () => {
    it('gets one endpoint and lists them oldest first with a Link to the next page', async () => {
      const { private_key: key } = await t.business();
      const r = await receiver();
      const made = [];
      for (let i = 0; i < 3; i++) made.push(await createWebhook(key, { url: `${r.url}/${i}`, events: ['*'], description: `hook ${i}` }));

      const one = await getWebhook(key, made[1]!.id);
      expect(one).toMatchObject({ id: made[1]!.id, url: `${r.url}/1`, events: ['*'], description: 'hook 1', active: true, deleted_at: null });

      const first = await t.request('GET', '/api/v1/webhooks?limit=2', { key });
      expect(first.status, first.text).toBe(200);
      expect(first.body.map((w: { id: string }) => w.id)).toEqual([made[0]!.id, made[1]!.id]);
      const next = first.headers.get('link')?.match(/<([^>]+)>;\s*rel="next"/)?.[1];
      expect(next).toBeDefined();
      const second = await t.request('GET', next!, { key });
      expect(second.body.map((w: { id: string }) => w.id)).toEqual([made[2]!.id]);
      expect(second.headers.get('link')).toBeNull();

      const all = await t.request('GET', '/api/v1/webhooks', { key });
      expect(all.body.map((w: { id: string }) => w.id)).toEqual(made.map((w) => w.id));
      expect(all.body[0]).toEqual(await getWebhook(key, made[0]!.id));
    });

    it("lists only the caller's business's endpoints", async () => {
      const a = await t.business();
      const b = await t.business();
      const r = await receiver();
      const mine = await createWebhook(a.private_key, { url: r.url, events: ['*'] });
      await createWebhook(b.private_key, { url: r.url, events: ['*'] });
      const list = await t.request('GET', '/api/v1/webhooks', { key: a.private_key });
      expect(list.body.map((w: { id: string }) => w.id)).toEqual([mine.id]);
    });
  });

  describe('updating', () => {
    it('changes url, events, description and active, one at a time, and shows the result', async () => {
      const { private_key: key } = await t.business();
      const r = await receiver();
      const { id } = await createWebhook(key, { url: r.url, events: ['points.earned'], description: 'first' });
      const created = await getWebhook(key, id);

      const patch = async (body: Record<string, unknown>) => {
        const response = await t.request('PATCH', `/api/v1/webhooks/${id}`, { key, body });
        expect(response.status, response.text).toBe(200);
        expect(response.body).toEqual(await getWebhook(key, id));
        return response.body;
      };

      expect(await patch({ url: `${r.url}/v2` })).toMatchObject({ url: `${r.url}/v2`, events: ['points.earned'], description: 'first', active: true });
      expect(await patch({ events: ['customer.created', 'tier.upgraded'] })).toMatchObject({ url: `${r.url}/v2`, events: ['customer.created', 'tier.upgraded'] });
      expect(await patch({ description: 'second' })).toMatchObject({ description: 'second' });
      expect(await patch({ description: null })).toMatchObject({ description: null });
      const disabled = await patch({ active: false });
      expect(disabled).toMatchObject({ active: false, url: `${r.url}/v2`, events: ['customer.created', 'tier.upgraded'] });
      const enabled = await patch({ active: true });
      expect(enabled).toMatchObject({ active: true, disabled_reason: null, deleted_at: null });
      expect(enabled.created_at).toBe(created.created_at);
      expect(Date.parse(enabled.updated_at)).toBeGreaterThanOrEqual(Date.parse(created.updated_at));
    });

    it('delivers to the new url after a PATCH', async () => {
      const { private_key: key } = await t.business();
      const before = await receiver();
      const after = await receiver();
      const { id } = await createWebhook(key, { url: before.url, events: ['*'] });
      const patched = await t.request('PATCH', `/api/v1/webhooks/${id}`, { key, body: { url: after.url } });
      expect(patched.status, patched.text).toBe(200);
      const messageId = await sendTest(key, id);
      await dispatch();
      expect(before.received).toEqual([]);
      expect(after.received.map((m) => m.headers['webhook-id'])).toEqual([messageId]);
    });

    it('refuses unknown fields, unknown event names and a secret in a PATCH, changing nothing', async () => {
      const { private_key: key } = await t.business();
      const r = await receiver();
      const { id } = await createWebhook(key, { url: r.url, events: ['*'] });
      const before = await getWebhook(key, id);
      expectError(await t.request('PATCH', `/api/v1/webhooks/${id}`, { key, body: { colour: 'blue' } }), 400, 'validation_error');
      expectError(await t.request('PATCH', `/api/v1/webhooks/${id}`, { key, body: { secret: 'whsec_AAAA' } }), 400, 'validation_error');
      expectValidationError(await t.request('PATCH', `/api/v1/webhooks/${id}`, { key, body: { events: ['points.lost'] } }), 'events');
      expectValidationError(await t.request('PATCH', `/api/v1/webhooks/${id}`, { key, body: { events: [] } }), 'events');
      expectValidationError(await t.request('PATCH', `/api/v1/webhooks/${id}`, { key, body: { active: 'yes' } }), 'active');
      expectValidationError(await t.request('PATCH', `/api/v1/webhooks/${id}`, { key, body: { url: 'nope' } }), 'url');
      expect(await getWebhook(key, id)).toEqual(before);
    });
  });

  describe('deleting', () => {
    it('answers 200 with deleted_at, then the endpoint is gone everywhere (404 webhook_not_found)', async () => {
      const { private_key: key } = await t.business();
      const r = await receiver();
      const kept = await createWebhook(key, { url: r.url, events: ['*'] });
      const { id } = await createWebhook(key, { url: r.url, events: ['*'] });

      const deleted = await t.request('DELETE', `/api/v1/webhooks/${id}`, { key });
      expect(deleted.status, deleted.text).toBe(200);
      expect(deleted.body).toMatchObject({ id, url: r.url, deleted_at: expect.stringMatching(ISO_MS) });
      expect(deleted.body.secret).toBeUndefined();

      expectError(await t.request('GET', `/api/v1/webhooks/${id}`, { key }), 404, 'webhook_not_found');
      expectError(await t.request('PATCH', `/api/v1/webhooks/${id}`, { key, body: { active: true } }), 404, 'webhook_not_found');
      expectError(await t.request('DELETE', `/api/v1/webhooks/${id}`, { key }), 404, 'webhook_not_found');
      expectError(await t.request('POST', `/api/v1/webhooks/${id}/rotate-secret`, { key }), 404, 'webhook_not_found');
      expectError(await t.request('GET', `/api/v1/webhooks/${id}/deliveries`, { key }), 404, 'webhook_not_found');
      expectError(await t.request('POST', `/api/v1/webhooks/${id}/test`, { key }), 404, 'webhook_not_found');
      const list = await t.request('GET', '/api/v1/webhooks', { key });
      expect(list.body.map((w: { id: string }) => w.id)).toEqual([kept.id]);
    });

    it('a repeated DELETE answers what a GET answers afterwards: 404 for a deleted webhook, 200 for a revoked key; an Idempotency-Key replays the first answer', async () => {
      const { private_key: key } = await t.business();
      const r = await receiver();

      // A deleted endpoint is gone: GET answers 404, and so does a second DELETE.
      const { id } = await createWebhook(key, { url: r.url, events: ['*'] });
      const deleted = await t.request('DELETE', `/api/v1/webhooks/${id}`, { key, headers: { 'idempotency-key': `delete-${id}` } });
      expect(deleted.status, deleted.text).toBe(200);
      expectError(await t.request('GET', `/api/v1/webhooks/${id}`, { key }), 404, 'webhook_not_found');
      expectError(await t.request('DELETE', `/api/v1/webhooks/${id}`, { key }), 404, 'webhook_not_found');
      // A client retrying its DELETE safely sends the same Idempotency-Key: the first answer again.
      const retried = await t.request('DELETE', `/api/v1/webhooks/${id}`, { key, headers: { 'idempotency-key': `delete-${id}` } });
      expect(retried.status, retried.text).toBe(200);
      expect(retried.headers.get('idempotent-replayed')).toBe('true');
      expect(retried.body).toEqual(deleted.body);

      // A revoked key still exists (listed, with revoked_at): a second DELETE answers it as it stands.
      const made = await t.request('POST', '/api/v1/keys', { key, body: { type: 'private', name: 'to revoke' } });
      expect(made.status, made.text).toBe(201);
      const keyId = made.body.id as string;
      const revoked = await t.request('DELETE', `/api/v1/keys/${keyId}`, { key });
      expect(revoked.status, revoked.text).toBe(200);
      expect(revoked.body.revoked_at).toMatch(ISO_MS);
      const listed = (await t.request('GET', '/api/v1/keys?limit=200', { key })).body.find((k: { id: string }) => k.id === keyId);
      expect(listed).toEqual(revoked.body);
      const again = await t.request('DELETE', `/api/v1/keys/${keyId}`, { key });
      expect(again.status, again.text).toBe(200);
      expect(again.body).toEqual(revoked.body);
    });

    it('sends nothing more to a deleted endpoint', async () => {
      const { private_key: key } = await t.business();
      const r = await receiver();
      const { id } = await createWebhook(key, { url: r.url, events: ['*'] });
      const customer = await t.request('POST', '/api/v1/customers', { key, body: { email: 'deleted-hook@example.com' } });
      expect(customer.status, customer.text).toBe(201);
      expect((await t.request('DELETE', `/api/v1/webhooks/${id}`, { key })).status).toBe(200);
      await t.request('POST', `/api/v1/customers/${customer.body.id}/points/transaction`, { key, body: { type: 'earn', amount: 5 } });
      await dispatch();
      await dispatch(new Date(Date.now() + 48 * HOUR));
      expect(r.received).toEqual([]);
    });
  });

  describe('test sends and the deliveries log', () => {
    it('queues a webhook.test message that the dispatcher delivers, signed, and lists the attempt', async () => {
      const { private_key: key } = await t.business();
      const r = await receiver();
      const { id, secret } = await createWebhook(key, { url: r.url, events: ['points.earned'] });
      expect(await deliveries(key, id)).toEqual([]);

      const response = await t.request('POST', `/api/v1/webhooks/${id}/test`, { key });
      expect(response.status, response.text).toBe(201);
      expect(response.body).toEqual({ id: expect.stringMatching(MESSAGE_ID), event_type: 'webhook.test', status: 'pending' });
      const messageId = response.body.id;
      expect(r.received).toEqual([]);

      await dispatch();
      expect(r.received).toHaveLength(1);
      const [delivery] = r.received;
      expect(delivery!.headers['webhook-id']).toBe(messageId);
      expect(delivery!.headers['content-type']).toMatch(/^application\/json/);
      const verified = new Webhook(secret).verify(delivery!.body, delivery!.headers) as any;
      expect(verified).toMatchObject({ type: 'webhook.test', timestamp: expect.stringMatching(ISO_MS), data: expect.any(Object) });

      const log = await deliveries(key, id);
      expect(log).toEqual([
        {
          id: expect.any(String),
          message_id: messageId,
          event_type: 'webhook.test',
          attempt: 1,
          attempted_at: expect.stringMatching(ISO_MS),
          status_code: 200,
          duration_ms: expect.any(Number),
          response_excerpt: 'ok',
          error: null,
          message_status: 'delivered',
          next_attempt_at: null,
        },
      ]);
      expect(Math.floor(Date.parse(log[0].attempted_at) / 1000)).toBe(Number(delivery!.headers['webhook-timestamp']));
    });

    it('refuses a test send to a disabled endpoint (409 conflict) instead of queueing a message nobody will send', async () => {
      const { private_key: key } = await t.business();
      const r = await receiver();
      const { id } = await createWebhook(key, { url: r.url, events: ['*'] });
      expect((await t.request('PATCH', `/api/v1/webhooks/${id}`, { key, body: { active: false } })).status).toBe(200);
      expectError(await t.request('POST', `/api/v1/webhooks/${id}/test`, { key }), 409, 'conflict');
      await dispatch();
      expect(r.received).toEqual([]);
      expect(await deliveries(key, id)).toEqual([]);

      expect((await t.request('PATCH', `/api/v1/webhooks/${id}`, { key, body: { active: true } })).status).toBe(200);
      await sendTest(key, id);
      await dispatch();
      expect(r.received).toHaveLength(1);
    });

    it('pages the deliveries log oldest first', async () => {
      const { private_key: key } = await t.business();
      const r = await receiver();
      const { id } = await createWebhook(key, { url: r.url, events: ['*'] });
      const sent = [];
      for (let i = 0; i < 3; i++) {
        sent.push(await sendTest(key, id));
        await dispatch();
      }
      const first = await t.request('GET', `/api/v1/webhooks/${id}/deliveries?limit=2`, { key });
      expect(first.status, first.text).toBe(200);
      expect(first.body.map((d: { message_id: string }) => d.message_id)).toEqual(sent.slice(0, 2));
      const next = first.headers.get('link')?.match(/<([^>]+)>;\s*rel="next"/)?.[1];
      const second = await t.request('GET', next!, { key });
      expect(second.body.map((d: { message_id: string }) => d.message_id)).toEqual(sent.slice(2));
      expect(second.headers.get('link')).toBeNull();
    });

    it('gives every attempt a random att_ id that reveals no counter, in every business, and pages by it', async () => {
      const r = await receiver();
      const lists: Array<{ key: string; id: string; attempts: string[] }> = [];
      for (const business of [await t.business(), await t.business()]) {
        const key = business.private_key;
        const { id } = await createWebhook(key, { url: r.url, events: ['*'] });
        for (let i = 0; i < 3; i++) {
          await sendTest(key, id);
          await dispatch();
        }
        const attempts = (await deliveries(key, id)).map((d) => d.id as string);
        lists.push({ key, id, attempts });

        // The id is the cursor: after the first attempt come the other two, oldest first.
        const after = await t.request('GET', `/api/v1/webhooks/${id}/deliveries?starting_after=${attempts[0]}`, { key });
        expect(after.status, after.text).toBe(200);
        expect(after.body.map((d: { id: string }) => d.id)).toEqual(attempts.slice(1));
      }
      const all = lists.flatMap((l) => l.attempts);
      expect(all).toHaveLength(6);
      for (const id of all) {
        expect(id).toMatch(ATTEMPT_ID);
        expect(id).not.toMatch(/^att_\d+$/);
      }
      expect(new Set(all).size).toBe(6);
      // No counter under a fixed prefix either: the ids do not even share their first characters.
      expect(new Set(all.map((id) => id.slice(0, 8))).size).toBeGreaterThan(1);

      // Another business's attempt is no cursor of this list (400, as any id not in the list).
      const [first, second] = lists;
      expectError(await t.request('GET', `/api/v1/webhooks/${second!.id}/deliveries?starting_after=${first!.attempts[0]}`, { key: second!.key }), 400, 'validation_error');
    });

    it("shows only the endpoint's own attempts", async () => {
      const { private_key: key } = await t.business();
      const r = await receiver();
      const a = await createWebhook(key, { url: r.url, events: ['*'] });
      const b = await createWebhook(key, { url: r.url, events: ['*'] });
      const toA = await sendTest(key, a.id);
      const toB = await sendTest(key, b.id);
      await dispatch();
      expect((await deliveries(key, a.id)).map((d) => d.message_id)).toEqual([toA]);
      expect((await deliveries(key, b.id)).map((d) => d.message_id)).toEqual([toB]);
    });
  });

  describe('rotating the secret', () => {
    it('answers a new secret; for 24 hours both the old and the new one sign, then only the new one', async () => {
      const { private_key: key } = await t.business();
      const r = await receiver();
      const { id, secret: oldSecret } = await createWebhook(key, { url: r.url, events: ['*'] });

      const rotatedFrom = Date.now();
      const rotated = await t.request('POST', `/api/v1/webhooks/${id}/rotate-secret`, { key });
      const rotatedUntil = Date.now();
      expect(rotated.status, rotated.text).toBe(200);
      expect(rotated.body).toMatchObject({ id, url: r.url, active: true, secret: expect.stringMatching(SECRET) });
      const newSecret = rotated.body.secret as string;
      expect(newSecret).not.toBe(oldSecret);
      expect((await getWebhook(key, id)).secret).toBeUndefined();

      // Right after the rotation: one receiver still on the old secret and one already on the new both verify.
      await sendTest(key, id);
      await dispatch();
      const during = r.received.at(-1)!;
      expect(signaturesOf(during)).toHaveLength(2);
      expect(new Webhook(oldSecret).verify(during.body, during.headers)).toMatchObject({ type: 'webhook.test' });
      expect(new Webhook(newSecret).verify(during.body, during.headers)).toMatchObject({ type: 'webhook.test' });
      // A secret that is neither does not.
      expect(() => new Webhook(`whsec_${Buffer.alloc(32, 7).toString('base64')}`).verify(during.body, during.headers)).toThrow();

      // Still both a minute before the 24 hours are up.
      await sendTest(key, id);
      await dispatch(new Date(rotatedFrom + 24 * HOUR - 60_000));
      const lateOverlap = r.received.at(-1)!;
      expect(signaturesOf(lateOverlap).sort()).toEqual([signatureFor(oldSecret, lateOverlap), signatureFor(newSecret, lateOverlap)].sort());

      // After 24 hours only the new secret signs.
      await sendTest(key, id);
      await dispatch(new Date(rotatedUntil + 24 * HOUR + 1000));
      const after = r.received.at(-1)!;
      expect(r.received).toHaveLength(3);
      expect(signaturesOf(after)).toEqual([signatureFor(newSecret, after)]);
      expect(signaturesOf(after)).not.toContain(signatureFor(oldSecret, after));
    });

    it('rotating twice keeps the first two secrets signing during their overlap and always signs with the newest', async () => {
      const { private_key: key } = await t.business();
      const r = await receiver();
      const { id, secret: first } = await createWebhook(key, { url: r.url, events: ['*'] });
      const second = (await t.request('POST', `/api/v1/webhooks/${id}/rotate-secret`, { key })).body.secret as string;
      const third = (await t.request('POST', `/api/v1/webhooks/${id}/rotate-secret`, { key })).body.secret as string;
      expect(new Set([first, second, third]).size).toBe(3);
      await sendTest(key, id);
      await dispatch();
      const delivery = r.received.at(-1)!;
      for (const secret of [first, second, third]) expect(new Webhook(secret).verify(delivery.body, delivery.headers)).toMatchObject({ type: 'webhook.test' });
    });

    it('two rotations at once leave a single current secret: after 24 hours exactly one signs', async () => {
      const { private_key: key } = await t.business();
      const r = await receiver();
      const { id, secret: original } = await createWebhook(key, { url: r.url, events: ['*'] });
      const rotations = await Promise.all([
        t.request('POST', `/api/v1/webhooks/${id}/rotate-secret`, { key }),
        t.request('POST', `/api/v1/webhooks/${id}/rotate-secret`, { key }),
      ]);
      const answered = rotations.map((response) => {
        expect(response.status, response.text).toBe(200);
        return response.body.secret as string;
      });
      expect(new Set([original, ...answered]).size).toBe(3);

      await sendTest(key, id);
      await dispatch(new Date(Date.now() + 24 * HOUR + 60_000));
      const after = r.received.at(-1)!;
      const signatures = signaturesOf(after);
      expect(signatures).toHaveLength(1);
      expect(signatures).not.toContain(signatureFor(original, after));
      expect(answered.map((secret) => signatureFor(secret, after))).toContain(signatures[0]);
    });
  });

  describe('permissions and tenancy', () => {
    it('requires webhooks:write on every webhooks endpoint (403 insufficient_permissions naming it)', async () => {
      const { private_key: key } = await t.business();
      const r = await receiver();
      const { id } = await createWebhook(key, { url: r.url, events: ['*'] });
      const without = await restrictedKey(key, ['customers:read', 'customers:write', 'points:read', 'points:write', 'rewards:read', 'rewards:write', 'keys:write']);
      const calls: Array<[string, string, unknown?]> = [
        ['POST', '/api/v1/webhooks', { url: r.url, events: ['*'] }],
        ['GET', '/api/v1/webhooks'],
        ['GET', `/api/v1/webhooks/${id}`],
        ['PATCH', `/api/v1/webhooks/${id}`, { active: false }],
        ['DELETE', `/api/v1/webhooks/${id}`],
        ['POST', `/api/v1/webhooks/${id}/rotate-secret`],
        ['GET', `/api/v1/webhooks/${id}/deliveries`],
        ['POST', `/api/v1/webhooks/${id}/test`],
      ];
      for (const [method, path, body] of calls) {
        const response = await t.request(method, path, { key: without, ...(body === undefined ? {} : { body }) });
        expectError(response, 403, 'insufficient_permissions');
        expect(response.body.message).toContain('webhooks:write');
      }
      // Nothing changed, nothing was created or queued.
      expect(await getWebhook(key, id)).toMatchObject({ active: true, deleted_at: null });
      expect((await t.request('GET', '/api/v1/webhooks', { key })).body).toHaveLength(1);
      await dispatch();
      expect(r.received).toEqual([]);
    });

    it('lets a key holding only webhooks:write manage webhooks', async () => {
      const { private_key: key } = await t.business();
      const r = await receiver();
      const only = await restrictedKey(key, ['webhooks:write']);
      const { id } = await createWebhook(only, { url: r.url, events: ['*'] });
      expect((await t.request('GET', `/api/v1/webhooks/${id}`, { key: only })).status).toBe(200);
      expect((await t.request('POST', `/api/v1/webhooks/${id}/rotate-secret`, { key: only })).status).toBe(200);
      expect((await t.request('DELETE', `/api/v1/webhooks/${id}`, { key: only })).status).toBe(200);
    });

    it('refuses a public key: 403 public_key_not_allowed on writes, 403 on reads', async () => {
      const { private_key: key, public_key: pub } = await t.business();
      const r = await receiver();
      const { id } = await createWebhook(key, { url: r.url, events: ['*'] });
      expectError(await t.request('POST', '/api/v1/webhooks', { key: pub, body: { url: r.url, events: ['*'] } }), 403, 'public_key_not_allowed');
      expectError(await t.request('PATCH', `/api/v1/webhooks/${id}`, { key: pub, body: { active: false } }), 403, 'public_key_not_allowed');
      expectError(await t.request('DELETE', `/api/v1/webhooks/${id}`, { key: pub }), 403, 'public_key_not_allowed');
      expectError(await t.request('POST', `/api/v1/webhooks/${id}/rotate-secret`, { key: pub }), 403, 'public_key_not_allowed');
      expectError(await t.request('POST', `/api/v1/webhooks/${id}/test`, { key: pub }), 403, 'public_key_not_allowed');
      for (const path of ['/api/v1/webhooks', `/api/v1/webhooks/${id}`, `/api/v1/webhooks/${id}/deliveries`]) {
        const response = await t.request('GET', path, { key: pub });
        expect(response.status, response.text).toBe(403);
        expect(response.text).not.toContain(r.url);
      }
      expect(await getWebhook(key, id)).toMatchObject({ active: true, deleted_at: null });
    });

    it("answers 404 webhook_not_found for an unknown id and for another business's webhook, changing nothing", async () => {
      const mine = await t.business();
      const theirs = await t.business();
      const r = await receiver();
      const foreign = await createWebhook(theirs.private_key, { url: r.url, events: ['*'] });
      const before = await getWebhook(theirs.private_key, foreign.id);
      for (const id of ['whk_doesnotexist000000000', foreign.id]) {
        const key = mine.private_key;
        expectError(await t.request('GET', `/api/v1/webhooks/${id}`, { key }), 404, 'webhook_not_found');
        expectError(await t.request('PATCH', `/api/v1/webhooks/${id}`, { key, body: { url: `${r.url}/stolen`, active: false } }), 404, 'webhook_not_found');
        expectError(await t.request('DELETE', `/api/v1/webhooks/${id}`, { key }), 404, 'webhook_not_found');
        expectError(await t.request('POST', `/api/v1/webhooks/${id}/rotate-secret`, { key }), 404, 'webhook_not_found');
        expectError(await t.request('GET', `/api/v1/webhooks/${id}/deliveries`, { key }), 404, 'webhook_not_found');
        expectError(await t.request('POST', `/api/v1/webhooks/${id}/test`, { key }), 404, 'webhook_not_found');
      }
      expect(await getWebhook(theirs.private_key, foreign.id)).toEqual(before);
      // The owner's secret still signs alone: no rotation happened through the other business.
      await sendTest(theirs.private_key, foreign.id);
      await dispatch();
      expect(r.received).toHaveLength(1);
      expect(signaturesOf(r.received[0]!)).toHaveLength(1);
      expect(new Webhook(foreign.secret).verify(r.received[0]!.body, r.received[0]!.headers)).toMatchObject({ type: 'webhook.test' });
    });
  });

  describe('URL guard without LOYALTY_WEBHOOK_ALLOW_PRIVATE', () => {
    const forbidden = [
      'https://127.0.0.1/hooks',
      'https://localhost/hooks',
      'https://10.1.2.3/hooks',
      'https://192.168.0.10/hooks',
      'https://172.16.5.4/hooks',
      'https://169.254.169.254/latest/meta-data/',
      'https://[::1]/hooks',
      'https://[::ffff:127.0.0.1]/hooks',
      'https://[::ffff:169.254.169.254]/hooks',
      'https://2130706433/hooks',
      'http://8.8.8.8/hooks',
      'http://127.0.0.1:8080/hooks',
    ];

    it.each(forbidden)('refuses to create a webhook to %s (400 validation_error on url)', async (url) => {
      const { private_key: key } = await strict.business();
      const response = await strict.request('POST', '/api/v1/webhooks', { key, body: { url, events: ['*'] } });
      expectValidationError(response, 'url');
      expect((await strict.request('GET', '/api/v1/webhooks', { key })).body).toEqual([]);
    });

    it('accepts an https URL to a public address', async () => {
      const { private_key: key } = await strict.business();
      const created = await createWebhook(key, { url: 'https://8.8.8.8/hooks', events: ['*'] }, strict);
      expect(created.url).toBe('https://8.8.8.8/hooks');
    });

    it('refuses to PATCH a webhook onto a forbidden address, leaving it unchanged', async () => {
      const { private_key: key } = await strict.business();
      const { id } = await createWebhook(key, { url: 'https://8.8.8.8/hooks', events: ['*'] }, strict);
      for (const url of forbidden) {
        expectValidationError(await strict.request('PATCH', `/api/v1/webhooks/${id}`, { key, body: { url } }), 'url');
      }
      expect((await getWebhook(key, id, strict)).url).toBe('https://8.8.8.8/hooks');
    });
  });
});

import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ProvisionedBusiness } from '../../src/cli/provision.js';
import { retryOnConflict } from '../../src/commands/retry-on-conflict.js';
import { ApiError } from '../../src/errors.js';
import { WrongExpectedVersion } from '../../src/store/event-store.js';
import { expectError } from '../support/expectations.js';
import { startTestApp, type TestApp } from '../support/test-app.js';

/** CONTRACT.md §5 as amended: what a replay may hand out, what is stored, and for how long. */
describe('Idempotency-Key: authorization, secrets, retryable answers and expiry', () => {
  let t: TestApp;
  let biz: ProvisionedBusiness;
  let n = 0;
  const idem = () => ({ 'Idempotency-Key': `rules-${Date.now()}-${++n}` });

  async function keyWith(permissions: string[]): Promise<{ id: string; key: string }> {
    const res = await t.request('POST', '/api/v1/keys', { key: biz.private_key, body: { type: 'private', permissions } });
    expect(res.status, res.text).toBe(201);
    return res.body;
  }

  const storedBodies = async () =>
    (await t.services.db.selectFrom('idempotency_keys').select(['key', 'response_body', 'response_status']).execute());

  beforeAll(async () => {
    t = await startTestApp({ config: { webhookAllowPrivate: true }, runDispatcher: false });
    biz = await t.business();
  });
  afterAll(() => t.close());

  describe('a replay runs every authorization rule for the key that sends it', () => {
    it('does not hand a full key to a keys:write key that replays the root key’s POST /keys', async () => {
      const weak = await keyWith(['keys:write']);
      const headers = idem();
      const first = await t.request('POST', '/api/v1/keys', { key: biz.private_key, headers, body: { type: 'private' } });
      expect(first.status).toBe(201);
      const before = (await t.request('GET', '/api/v1/keys?limit=200', { key: biz.private_key })).body.length;

      const replayed = await t.request('POST', '/api/v1/keys', { key: weak.key, headers, body: { type: 'private' } });
      expectError(replayed, 403, 'insufficient_permissions');
      expect(replayed.headers.get('idempotent-replayed')).toBeNull();
      expect(replayed.text).not.toContain('sk_live_');
      expect((await t.request('GET', '/api/v1/keys?limit=200', { key: biz.private_key })).body.length).toBe(before);
    });

    it('does not replay a revocation to a key that could not revoke that key itself', async () => {
      const target = await keyWith(['customers:read', 'keys:write']);
      const weak = await keyWith(['keys:write']);
      const headers = idem();
      expect((await t.request('DELETE', `/api/v1/keys/${target.id}`, { key: biz.private_key, headers })).status).toBe(200);
      expectError(await t.request('DELETE', `/api/v1/keys/${target.id}`, { key: weak.key, headers }), 403, 'insufficient_permissions');
    });

    it('never stores a 403: the same key and request from a key that may make it goes through', async () => {
      const weak = await keyWith(['keys:write']);
      const headers = idem();
      const body = { type: 'private', permissions: ['customers:read'] };
      expectError(await t.request('POST', '/api/v1/keys', { key: weak.key, headers, body }), 403, 'insufficient_permissions');
      const allowed = await t.request('POST', '/api/v1/keys', { key: biz.private_key, headers, body });
      expect(allowed.status, allowed.text).toBe(201);
      expect(allowed.headers.get('idempotent-replayed')).toBeNull();
    });
  });

  describe('stored answers never hold a secret', () => {
    it('replays a created key with key: null, and stores no key', async () => {
      const headers = idem();
      const first = await t.request('POST', '/api/v1/keys', { key: biz.private_key, headers, body: { type: 'public' } });
      expect(first.body.key).toMatch(/^pk_live_/);
      const replay = await t.request('POST', '/api/v1/keys', { key: biz.private_key, headers, body: { type: 'public' } });
      expect(replay.status).toBe(201);
      expect(replay.headers.get('idempotent-replayed')).toBe('true');
      expect(replay.body).toEqual({ ...first.body, key: null });
    });

    it('replays a created webhook and a rotated secret with secret: null', async () => {
      const createHeaders = idem();
      const body = { url: 'http://127.0.0.1:9/hook', events: ['*'] };
      const created = await t.request('POST', '/api/v1/webhooks', { key: biz.private_key, headers: createHeaders, body });
      expect(created.body.secret).toMatch(/^whsec_/);
      const createReplay = await t.request('POST', '/api/v1/webhooks', { key: biz.private_key, headers: createHeaders, body });
      expect(createReplay.body).toEqual({ ...created.body, secret: null });

      const rotateHeaders = idem();
      const path = `/api/v1/webhooks/${created.body.id}/rotate-secret`;
      const rotated = await t.request('POST', path, { key: biz.private_key, headers: rotateHeaders });
      expect(rotated.body.secret).toMatch(/^whsec_/);
      const rotateReplay = await t.request('POST', path, { key: biz.private_key, headers: rotateHeaders });
      expect(rotateReplay.headers.get('idempotent-replayed')).toBe('true');
      expect(rotateReplay.body.secret).toBeNull();
    });

    it('keeps no key or signing secret in the idempotency table', async () => {
      const rows = await storedBodies();
      expect(rows.length).toBeGreaterThan(3);
      for (const row of rows) expect(row.response_body ?? '').not.toMatch(/sk_live_[0-9A-Za-z]|pk_live_[0-9A-Za-z]|whsec_[0-9A-Za-z]/);
    });
  });

  describe('retryable answers are not stored', () => {
    it('answers a retry after a 409 conflict afresh, not with the stored 409', async () => {
      const name = `Tier ${++n}`;
      const taken = await t.request('POST', '/api/v1/tiers', { key: biz.private_key, body: { name, points_threshold: 1000 + n, multiplier: 1 } });
      expect(taken.status).toBe(201);
      const headers = idem();
      const body = { name, points_threshold: 5000 + n, multiplier: 1 };
      expectError(await t.request('POST', '/api/v1/tiers', { key: biz.private_key, headers, body }), 409, 'conflict');
      // the name is freed; the same request under the same key now succeeds
      expect((await t.request('PATCH', `/api/v1/tiers/${taken.body.id}`, { key: biz.private_key, body: { name: `${name} (old)` } })).status).toBe(200);
      const retried = await t.request('POST', '/api/v1/tiers', { key: biz.private_key, headers, body });
      expect(retried.status, retried.text).toBe(201);
      expect(retried.headers.get('idempotent-replayed')).toBeNull();
    });

    it('gives a 409 conflict from an exhausted concurrency budget a Retry-After', async () => {
      const error = await retryOnConflict(() => Promise.reject(new WrongExpectedVersion('s', 1, 2)), 2).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ApiError);
      expect(error).toMatchObject({ status: 409, code: 'conflict', headers: { 'Retry-After': '1' } });
    });
  });

  describe('"same request" compares the parsed body', () => {
    it('replays a body that differs only in whitespace and key order', async () => {
      const customer = await t.request('POST', '/api/v1/customers', { key: biz.private_key, body: { email: `parsed-${++n}@example.com` } });
      const headers = { ...idem(), 'content-type': 'application/json' };
      const path = `/api/v1/customers/${customer.body.id}/points/transaction`;
      const first = await t.request('POST', path, { key: biz.private_key, headers, rawBody: '{"type":"earn","amount":7}' });
      expect(first.status).toBe(201);
      const again = await t.request('POST', path, { key: biz.private_key, headers, rawBody: '{ "amount": 7,\n  "type": "earn" }' });
      expect(again.status).toBe(201);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(again.body.id).toBe(first.body.id);
      const different = await t.request('POST', path, { key: biz.private_key, headers, rawBody: '{"type":"earn","amount":8}' });
      expectError(different, 422, 'idempotency_key_reused');
    });

    it('treats no body, an empty body and {} as the same', async () => {
      const webhook = await t.request('POST', '/api/v1/webhooks', { key: biz.private_key, body: { url: 'http://127.0.0.1:9/h', events: ['*'] } });
      const headers = idem();
      const path = `/api/v1/webhooks/${webhook.body.id}/rotate-secret`;
      expect((await t.request('POST', path, { key: biz.private_key, headers })).status).toBe(200);
      const empty = await t.request('POST', path, { key: biz.private_key, headers: { ...headers, 'content-type': 'application/json' }, rawBody: '' });
      const braces = await t.request('POST', path, { key: biz.private_key, headers, body: {} });
      for (const replay of [empty, braces]) expect(replay.headers.get('idempotent-replayed'), replay.text).toBe('true');
    });
  });
});

describe('Idempotency-Key records expire after 24 hours', () => {
  let t: TestApp;
  let biz: ProvisionedBusiness;
  let nowMs = Date.parse('2026-03-01T12:00:00.000Z');
  let n = 0;
  const clock = { now: () => new Date(nowMs) };
  const newCustomer = () =>
    t.request('POST', '/api/v1/customers', { key: biz.private_key, headers: { 'Idempotency-Key': `expiry-${++n}` }, body: { email: `expiry-${n}@example.com` } });
  const expired = async () =>
    Number((await sql<{ n: string }>`select count(*) as n from idempotency_keys where created_at < ${new Date(nowMs - 24 * 3600_000)}`.execute(t.services.db)).rows[0]!.n);

  beforeAll(async () => {
    t = await startTestApp({ clock, runDispatcher: false });
    biz = await t.business();
  });
  afterAll(() => t.close());

  it('deletes records once 24 hours old, also those whose key is never sent again, a chunk at a time beside later claims', async () => {
    expect((await newCustomer()).status).toBe(201);
    // 1,200 more records of a day ago, whose keys nobody sends again
    await sql`insert into idempotency_keys (business_id, key, fingerprint, state, created_at, locked_until)
              select ${biz.business_id}, 'old-' || g, 'f', 'done', ${new Date(nowMs)}, ${new Date(nowMs)} from generate_series(1, 1200) g`.execute(t.services.db);
    nowMs += 24 * 3600_000 + 1000;
    expect(await expired()).toBe(1201);
    // Each claim sweeps a chunk of 500 beside it; after a whole chunk the next claim sweeps again at once.
    for (const left of [701, 201, 0]) {
      expect((await newCustomer()).status).toBe(201);
      await expect.poll(expired).toBe(left);
    }
    // Within a second of a sweep that found less than a chunk, claims do not sweep.
    await sql`update idempotency_keys set created_at = ${new Date(nowMs - 25 * 3600_000)} where key = ${`expiry-${n}`}`.execute(t.services.db);
    nowMs += 500;
    expect((await newCustomer()).status).toBe(201);
    expect(await expired()).toBe(1);
    nowMs += 600;
    expect((await newCustomer()).status).toBe(201);
    await expect.poll(expired).toBe(0);
    const oldest = await sql<{ age: number }>`select extract(epoch from ${new Date(nowMs)}::timestamptz - min(created_at))::float8 as age from idempotency_keys`.execute(t.services.db);
    expect(oldest.rows[0]!.age).toBeLessThan(24 * 3600);
  });
});

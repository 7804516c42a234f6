import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ProvisionedBusiness } from '../../src/cli/provision.js';
import { loadConfig } from '../../src/config.js';
import { createApp } from '../../src/http/app.js';
import { createServices, type Services } from '../../src/services.js';
import { startTestApp, type TestApp, type TestResponse } from '../support/test-app.js';
import { expectError, ISO_MS } from '../support/expectations.js';

const ALL_PERMISSIONS = [
  'customers:read',
  'customers:write',
  'points:read',
  'points:write',
  'rewards:read',
  'rewards:write',
  'webhooks:write',
  'keys:write',
];
const PUBLIC_PERMISSIONS = ['customers:read', 'points:read', 'rewards:read'];
const KEY_ID = /^key_[0-9A-Za-z_-]{16,}$/;

const sorted = (values: string[]) => [...values].sort();

/** The target of a `Link: <…>; rel="next"` header, or null. */
function nextLink(link: string | null): string | null {
  if (!link) return null;
  return /<([^>]+)>\s*;\s*rel="?next"?/.exec(link)?.[1] ?? null;
}

describe('API keys over HTTP', () => {
  let t: TestApp;
  let biz: ProvisionedBusiness;

  async function createKey(body: unknown, key = biz.private_key) {
    return t.request('POST', '/api/v1/keys', { key, body });
  }

  beforeAll(async () => {
    t = await startTestApp();
    biz = await t.business();
  });
  afterAll(() => t.close());

  describe('creating a key', () => {
    it('creates a private key holding all eight permissions when no list is given', async () => {
      const res = await createKey({ type: 'private', name: 'backend' });
      expect(res.status).toBe(201);
      for (const field of ['id', 'type', 'name', 'permissions', 'key', 'key_hint', 'created_at']) {
        expect(res.body).toHaveProperty(field);
      }
      expect(res.body.id).toMatch(KEY_ID);
      expect(res.body.type).toBe('private');
      expect(res.body.name).toBe('backend');
      expect(sorted(res.body.permissions)).toEqual(sorted(ALL_PERMISSIONS));
      expect(res.body.key).toMatch(/^sk_live_[0-9A-Za-z]{32,}$/);
      expect(typeof res.body.key_hint).toBe('string');
      expect(res.body.key_hint.length).toBeLessThan(res.body.key.length);
      expect(res.body.created_at).toMatch(ISO_MS);
    });

    it('creates a public key holding exactly customers:read, points:read and rewards:read', async () => {
      const res = await createKey({ type: 'public', name: 'storefront' });
      expect(res.status).toBe(201);
      expect(res.body.type).toBe('public');
      expect(res.body.key).toMatch(/^pk_live_[0-9A-Za-z]{32,}$/);
      expect(sorted(res.body.permissions)).toEqual(sorted(PUBLIC_PERMISSIONS));
    });

    it('refuses a public key with a permission list (400) and creates nothing', async () => {
      const before = await t.request('GET', '/api/v1/keys?limit=200', { key: biz.private_key });
      const res = await createKey({ type: 'public', permissions: ['customers:read'] });
      expect(res.status).toBe(400);
      expect(res.body.code).toBe('validation_error');
      const after = await t.request('GET', '/api/v1/keys?limit=200', { key: biz.private_key });
      expect(after.body.length).toBe(before.body.length);
    });

    it('refuses an unknown type or permission name with 400 validation_error', async () => {
      const badType = await createKey({ type: 'secret' });
      expect(badType.status).toBe(400);
      expect(badType.body.code).toBe('validation_error');
      expect(badType.body.details.map((d: { path: string }) => d.path)).toContain('type');
      const badPermission = await createKey({ type: 'private', permissions: ['customers:delete'] });
      expect(badPermission.status).toBe(400);
      expect(badPermission.body.code).toBe('validation_error');
    });

    it('creates a restricted private key with exactly the listed permissions, usable at once', async () => {
      const res = await createKey({ type: 'private', permissions: ['customers:read', 'customers:write'] });
      expect(res.status).toBe(201);
      expect(sorted(res.body.permissions)).toEqual(['customers:read', 'customers:write']);
      const created = await t.request('POST', '/api/v1/customers', { key: res.body.key, body: { email: 'restricted@example.com' } });
      expect(created.status).toBe(201);
      const listed = await t.request('GET', '/api/v1/customers', { key: res.body.key });
      expect(listed.status).toBe(200);
      expect(listed.body.map((c: { id: string }) => c.id)).toContain(created.body.id);
      const earn = await t.request('POST', `/api/v1/customers/${created.body.id}/points/transaction`, {
        key: res.body.key,
        body: { type: 'earn', amount: 5 },
      });
      expect(earn.status).toBe(403);
      expect(earn.body.code).toBe('insufficient_permissions');
    });

    it('makes a new key usable on the very next request, by either header', async () => {
      const priv = await createKey({ type: 'private' });
      expect((await t.request('GET', '/api/v1/keys', { key: priv.body.key })).status).toBe(200);
      const pub = await createKey({ type: 'public' });
      const read = await t.request('GET', '/api/v1/tiers', { headers: { Authorization: `Bearer ${pub.body.key}` } });
      expect(read.status).toBe(200);
    });

    it('gives every key a different secret', async () => {
      const keys = await Promise.all([1, 2, 3, 4].map(() => createKey({ type: 'private' })));
      expect(keys.every((k) => k.status === 201)).toBe(true);
      expect(new Set(keys.map((k) => k.body.key)).size).toBe(4);
      expect(new Set(keys.map((k) => k.body.id)).size).toBe(4);
    });
  });

  describe('a key cannot grant what it lacks', () => {
    it('refuses a permission the creating key does not hold with 403 insufficient_permissions', async () => {
      const limited = await createKey({ type: 'private', permissions: ['keys:write', 'customers:read'] });
      expect(limited.status).toBe(201);
      const before = await t.request('GET', '/api/v1/keys?limit=200', { key: biz.private_key });

      const escalate = await createKey({ type: 'private', permissions: ['customers:read', 'points:write'] }, limited.body.key);
      expect(escalate.status).toBe(403);
      expect(escalate.body.code).toBe('insufficient_permissions');
      expect(escalate.body.message).toContain('points:write');

      const everything = await createKey({ type: 'private' }, limited.body.key);
      expect(everything.status).toBe(403);
      expect(everything.body.code).toBe('insufficient_permissions');

      const after = await t.request('GET', '/api/v1/keys?limit=200', { key: biz.private_key });
      expect(after.body.length).toBe(before.body.length);
    });

    it('allows a subset of its own permissions', async () => {
      const limited = await createKey({ type: 'private', permissions: ['keys:write', 'customers:read'] });
      const subset = await createKey({ type: 'private', permissions: ['customers:read'] }, limited.body.key);
      expect(subset.status).toBe(201);
      expect(subset.body.permissions).toEqual(['customers:read']);
    });
  });

  describe('listing keys', () => {
    it('never shows a full key, only its hint, and includes revoked keys with revoked_at', async () => {
      const created = await createKey({ type: 'private', name: 'to be revoked' });
      const pub = await createKey({ type: 'public', name: 'listed public' });
      const revoke = await t.request('DELETE', `/api/v1/keys/${created.body.id}`, { key: biz.private_key });
      expect(revoke.status).toBe(200);

      const res = await t.request('GET', '/api/v1/keys?limit=200', { key: biz.private_key });
      expect(res.status).toBe(200);
      for (const secret of [created.body.key, pub.body.key, biz.private_key, biz.public_key]) {
        expect(res.text.includes(secret)).toBe(false);
        expect(res.text.includes(secret.slice(8))).toBe(false);
      }
      expect(res.text).not.toMatch(/"key"\s*:/);
      for (const item of res.body) expect(item).not.toHaveProperty('key');

      const listedRevoked = res.body.find((k: { id: string }) => k.id === created.body.id);
      expect(listedRevoked).toMatchObject({ id: created.body.id, type: 'private', name: 'to be revoked', key_hint: created.body.key_hint });
      expect(listedRevoked.revoked_at).toMatch(ISO_MS);
      const listedPublic = res.body.find((k: { id: string }) => k.id === pub.body.id);
      expect(listedPublic).toMatchObject({ type: 'public', name: 'listed public', revoked_at: null });
    });

    it('pages with limit and starting_after, oldest first, with a Link header while more remain', async () => {
      const other = await t.business();
      for (let i = 0; i < 3; i++) {
        expect((await createKey({ type: 'private', name: `page-${i}` }, other.private_key)).status).toBe(201);
      }
      const all = await t.request('GET', '/api/v1/keys', { key: other.private_key });
      expect(all.body).toHaveLength(5);
      expect(all.headers.get('link')).toBeNull();
      const createdAt = all.body.map((k: { created_at: string }) => k.created_at);
      expect(createdAt).toEqual([...createdAt].sort());
      expect(all.body.slice(2).map((k: { name: string }) => k.name)).toEqual(['page-0', 'page-1', 'page-2']);

      const seen: string[] = [];
      let path: string | null = '/api/v1/keys?limit=2';
      let pages = 0;
      while (path) {
        const page = await t.request('GET', path, { key: other.private_key });
        expect(page.status).toBe(200);
        expect(page.body.length).toBeLessThanOrEqual(2);
        seen.push(...page.body.map((k: { id: string }) => k.id));
        path = nextLink(page.headers.get('link'));
        if (path) expect(path).toContain('limit=2');
        pages++;
        expect(pages).toBeLessThanOrEqual(3);
      }
      expect(pages).toBe(3);
      expect(seen).toEqual(all.body.map((k: { id: string }) => k.id));

      const third = all.body[2].id;
      const after = await t.request('GET', `/api/v1/keys?starting_after=${third}`, { key: other.private_key });
      expect(after.body.map((k: { id: string }) => k.id)).toEqual(all.body.slice(3).map((k: { id: string }) => k.id));
    });

    it('shows only the keys of the caller’s business', async () => {
      const other = await t.business();
      const mine = await t.request('GET', '/api/v1/keys?limit=200', { key: biz.private_key });
      const theirs = await t.request('GET', '/api/v1/keys?limit=200', { key: other.private_key });
      expect(theirs.body).toHaveLength(2);
      const myIds = new Set(mine.body.map((k: { id: string }) => k.id));
      expect(theirs.body.some((k: { id: string }) => myIds.has(k.id))).toBe(false);
    });
  });

  describe('revoking a key', () => {
    it('answers 200 with revoked_at set, and again 200 when revoked twice', async () => {
      const created = await createKey({ type: 'private', name: 'short-lived' });
      const first = await t.request('DELETE', `/api/v1/keys/${created.body.id}`, { key: biz.private_key });
      expect(first.status).toBe(200);
      expect(first.body).toMatchObject({ id: created.body.id, type: 'private', name: 'short-lived' });
      expect(first.body).not.toHaveProperty('key');
      expect(first.body.revoked_at).toMatch(ISO_MS);
      expect(Date.parse(first.body.revoked_at)).toBeGreaterThanOrEqual(Date.parse(created.body.created_at));

      const second = await t.request('DELETE', `/api/v1/keys/${created.body.id}`, { key: biz.private_key });
      expect(second.status).toBe(200);
      expect(second.body.revoked_at).toBe(first.body.revoked_at);
      expect((await t.request('GET', '/api/v1/customers', { key: created.body.key })).status).toBe(401);
    });

    it('answers 404 key_not_found for an unknown id', async () => {
      const res = await t.request('DELETE', '/api/v1/keys/key_DoesNotExist000000', { key: biz.private_key });
      expect(res.status).toBe(404);
      expect(res.body.code).toBe('key_not_found');
    });

    it('answers 404 key_not_found for another business’s key, which keeps working', async () => {
      const other = await t.business();
      const theirs = await createKey({ type: 'private' }, other.private_key);
      const res = await t.request('DELETE', `/api/v1/keys/${theirs.body.id}`, { key: biz.private_key });
      expect(res.status).toBe(404);
      expect(res.body.code).toBe('key_not_found');
      expect((await t.request('GET', '/api/v1/customers', { key: theirs.body.key })).status).toBe(200);
      const listed = await t.request('GET', '/api/v1/keys?limit=200', { key: other.private_key });
      expect(listed.body.find((k: { id: string }) => k.id === theirs.body.id).revoked_at).toBeNull();
    });
  });

  describe('revocation never locks a business out (CONTRACT §2)', () => {
    /** A new business, its default private key (all permissions) and that key's id. */
    async function newBusiness() {
      const business = await t.business();
      const listed = await t.request('GET', '/api/v1/keys', { key: business.private_key });
      const rootId = listed.body.find((k: { type: string }) => k.type === 'private').id as string;
      const publicId = listed.body.find((k: { type: string }) => k.type === 'public').id as string;
      return { ...business, rootId, publicId };
    }
    const revoke = (keyId: string, key: string) => t.request('DELETE', `/api/v1/keys/${keyId}`, { key });
    const isActive = async (businessId: string, keyId: string) => (await t.services.queries.access.key(businessId, keyId))?.revoked_at === null;

    it('refuses a key that lacks one of the target’s permissions with 403 insufficient_permissions; the target keeps working', async () => {
      const business = await newBusiness();
      const limited = await createKey({ type: 'private', permissions: ['keys:write', 'customers:read'] }, business.private_key);
      const refused = await revoke(business.rootId, limited.body.key);
      expectError(refused, 403, 'insufficient_permissions');
      expect(refused.body.message).toMatch(/customers:write|points:|rewards:|webhooks:write/);
      expect(await isActive(business.business_id, business.rootId)).toBe(true);
      expect((await t.request('GET', '/api/v1/customers', { key: business.private_key })).status).toBe(200);
      // The CLI's path (no revoker) is not restricted; a revoker is, in the command itself as well as the route.
      const ctx = { businessId: business.business_id, actor: 'test', requestId: null, idempotencyKey: null, now: new Date() };
      await expect(t.services.commands.apiKeys.revoke(ctx, business.rootId, { revoker: limited.body.permissions })).rejects.toMatchObject({
        status: 403,
        code: 'insufficient_permissions',
      });
      // A key holding every permission of the target may revoke it.
      const readers = await createKey({ type: 'private', permissions: ['customers:read'] }, business.private_key);
      expect((await revoke(readers.body.id, limited.body.key)).status).toBe(200);
    });

    it('refuses to revoke the only private key with keys:write, even by itself: 409 last_private_key, and it keeps working', async () => {
      const business = await newBusiness();
      const refused = await revoke(business.rootId, business.private_key);
      expectError(refused, 409, 'last_private_key');
      expect((await t.request('GET', '/api/v1/keys', { key: business.private_key })).status).toBe(200);
      // Keys that do not manage keys go as before, the public one included.
      expect((await revoke(business.publicId, business.private_key)).status).toBe(200);
      const restricted = await createKey({ type: 'private', permissions: ['customers:read'] }, business.private_key);
      expect((await revoke(restricted.body.id, business.private_key)).status).toBe(200);
      expectError(await revoke(business.rootId, business.private_key), 409, 'last_private_key');
    });

    it('revokes a private key with keys:write while another remains, then refuses the last one', async () => {
      const business = await newBusiness();
      const second = await createKey({ type: 'private', name: 'second' }, business.private_key);
      const first = await revoke(business.rootId, business.private_key);
      expect(first.status, first.text).toBe(200);
      expect(first.body.revoked_at).toMatch(ISO_MS);
      expectError(await revoke(second.body.id, second.body.key), 409, 'last_private_key');
      expect((await t.request('GET', '/api/v1/keys', { key: second.body.key })).status).toBe(200);
      // The revoked one again: 200, as it stands (no second revocation, no 409).
      const again = await revoke(business.rootId, second.body.key);
      expect(again.status, again.text).toBe(200);
      expect(again.body.revoked_at).toBe(first.body.revoked_at);
      // A new key with keys:write makes the old one revocable.
      const third = await createKey({ type: 'private', name: 'third' }, second.body.key);
      expect(third.status).toBe(201);
      expect((await revoke(second.body.id, third.body.key)).status).toBe(200);
      expect(await isActive(business.business_id, third.body.id)).toBe(true);
    });

    /** The last two keys with keys:write, each revoked by a parallel DELETE sent with it (through `via`). */
    async function raceLastTwo(via: (i: number, method: string, path: string, key: string) => Promise<TestResponse>) {
      const business = await newBusiness();
      const other = await createKey({ type: 'private' }, business.private_key);
      const keys = [
        { id: business.rootId, key: business.private_key },
        { id: other.body.id as string, key: other.body.key as string },
      ];
      const responses = await Promise.all(keys.map((k, i) => via(i, 'DELETE', `/api/v1/keys/${k.id}`, k.key)));
      // One revocation goes through. The other is refused: 409 last_private_key, or 401 when its
      // own key was the one just revoked before it was authenticated.
      const statuses = responses.map((r) => r.status).sort();
      expect(statuses.filter((s) => s === 200), statuses.join()).toHaveLength(1);
      for (const r of responses.filter((x) => x.status !== 200)) {
        if (r.status === 409) expectError(r, 409, 'last_private_key');
        else expectError(r, 401, 'invalid_api_key');
      }
      const active = await Promise.all(keys.map((k) => isActive(business.business_id, k.id)));
      expect(active.filter(Boolean), JSON.stringify(active)).toHaveLength(1);
      // The survivor still manages the business's keys.
      const survivor = keys[active.indexOf(true)]!;
      expect((await via(0, 'GET', '/api/v1/keys', survivor.key)).status).toBe(200);
    }

    it('leaves one of the last two such keys active when both are revoked by parallel requests', async () => {
      for (let round = 0; round < 8; round++) {
        await raceLastTwo((_, method, path, key) => t.request(method, path, { key }));
      }
    });

    describe('across two service instances on one database', () => {
      let second: Services;
      let secondApp: ReturnType<typeof createApp>;
      beforeAll(async () => {
        second = await createServices({
          config: { ...loadConfig({}), logLevel: 'silent', rateLimitRps: 0, publicRateLimitRps: 0 },
          database: { ...t.services.database, close: async () => {} },
          runProjections: true,
          logger: pino({ level: 'silent' }),
        });
        secondApp = createApp(second);
      });
      afterAll(() => second.close());

      it('leaves one of the last two such keys active when each instance revokes one at the same time', async () => {
        for (let round = 0; round < 8; round++) {
          await raceLastTwo(async (instance, method, path, key) => {
            if (instance === 0) return t.request(method, path, { key });
            const response = await secondApp.request(path, { method, headers: { 'x-api-key': key } });
            const text = await response.text();
            return { status: response.status, headers: response.headers, body: text ? JSON.parse(text) : undefined, text };
          });
        }
      });
    });
  });
});

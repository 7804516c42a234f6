import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PRINCIPAL_TTL_MS } from '../../src/projections/access/principal-cache.js';
import { instanceBeside } from '../support/instance-beside.js';
import { startTestApp, type TestApp } from '../support/test-app.js';

/**
 * CONTRACT.md §2 (amended 2026-11-24): a revoked key fails on the very next request on the
 * instance that revoked it, and within 1 second on every other instance (they keep principals for
 * under a second). Two instances of the service on one database, each with its own cache.
 */
describe('a revoked key, with principals cached', () => {
  let t: TestApp;
  let other: Awaited<ReturnType<typeof instanceBeside>>;
  beforeAll(async () => {
    t = await startTestApp();
    other = await instanceBeside(t);
  });
  afterAll(async () => {
    await other?.services.close();
    await t?.close();
  });

  it('is refused on the next request where it was revoked, and within 1 s on another instance that had it cached', async () => {
    const { private_key: root } = await t.business();
    const created = await t.request('POST', '/api/v1/keys', { key: root, body: { type: 'private', name: 'doomed' } });
    expect(created.status).toBe(201);
    const doomed: string = created.body.key;
    expect((await t.request('GET', '/api/v1/customers', { key: doomed })).status).toBe(200);
    expect((await other.request('GET', '/api/v1/customers', doomed)).status).toBe(200); // now cached there too

    const revoked = await t.request('DELETE', `/api/v1/keys/${created.body.id}`, { key: root });
    expect(revoked.status).toBe(200);
    const answeredAt = performance.now();
    expect((await t.request('GET', '/api/v1/customers', { key: doomed })).status).toBe(401);

    // Every request the other instance receives a second or more after the revocation is refused.
    const polls: Array<{ sentAfterMs: number; status: number }> = [];
    while (polls.at(-1)?.status !== 401 || performance.now() - answeredAt < 1_200) {
      const sentAfterMs = performance.now() - answeredAt;
      polls.push({ sentAfterMs, status: (await other.request('GET', '/api/v1/customers', doomed)).status });
      if (sentAfterMs > 5_000) break;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(polls.filter((p) => p.sentAfterMs >= 1_000 && p.status !== 401)).toEqual([]);
    expect(polls.at(-1)!.status).toBe(401);
  });

  it('answers a busy key from memory: one database lookup for many requests within the second', async () => {
    const { private_key: key } = await t.business();
    const lookups: string[] = [];
    const access = t.services.queries.access;
    const original = access.principalByKeyHash;
    access.principalByKeyHash = async (hash) => {
      lookups.push(hash);
      return original(hash);
    };
    try {
      t.services.principals.clear();
      const started = performance.now();
      for (let i = 0; i < 20; i++) expect((await t.request('GET', '/api/v1/customers', { key })).status).toBe(200);
      // One lookup per PRINCIPAL_TTL_MS at most, however slow the machine.
      expect(lookups.length).toBeLessThanOrEqual(1 + Math.floor((performance.now() - started) / PRINCIPAL_TTL_MS));
      expect(lookups.length).toBeLessThan(20);
    } finally {
      access.principalByKeyHash = original;
    }
  });
});

import { describe, expect, it } from 'vitest';
import type { Principal } from '../../src/projections/access/access-queries.js';
import { PrincipalCache } from '../../src/projections/access/principal-cache.js';

const principal = (keyId: string): Principal => ({ keyId, businessId: 'biz_1', type: 'private', permissions: ['customers:read'], keyHash: `hash-${keyId}` });

describe('principal cache', () => {
  it('answers a key from memory for ttlMs after it was asked for, then reads the database again', async () => {
    let now = 0;
    const cache = new PrincipalCache({ ttlMs: 900, now: () => now });
    const reads: string[] = [];
    const load = async (hash: string) => {
      reads.push(hash);
      return principal('key_1');
    };
    await cache.lookup('h1', load);
    now = 899;
    expect(await cache.lookup('h1', load)).toEqual(principal('key_1'));
    expect(reads).toEqual(['h1']);
    now = 900;
    await cache.lookup('h1', load);
    expect(reads).toEqual(['h1', 'h1']);
  });

  it('never keeps an unknown or revoked key, so a key made elsewhere works at once', async () => {
    const cache = new PrincipalCache({ now: () => 0 });
    let found: Principal | undefined;
    const load = async () => found;
    expect(await cache.lookup('h2', load)).toBeUndefined();
    found = principal('key_2');
    expect(await cache.lookup('h2', load)).toEqual(principal('key_2'));
  });

  it('does not keep what a lookup read if the cache was cleared while it was reading (a revocation raced it)', async () => {
    const cache = new PrincipalCache({ now: () => 0 });
    let release!: () => void;
    const slow = cache.lookup('h3', () => new Promise<Principal>((resolve) => (release = () => resolve(principal('key_3')))));
    cache.clear();
    release();
    expect(await slow).toEqual(principal('key_3'));
    let reads = 0;
    await cache.lookup('h3', async () => {
      reads++;
      return undefined;
    });
    expect(reads).toBe(1);
  });

  it('holds at most `capacity` keys, dropping the oldest', async () => {
    const cache = new PrincipalCache({ capacity: 2, now: () => 0 });
    let reads = 0;
    const load = async (hash: string) => {
      reads++;
      return principal(hash);
    };
    for (const hash of ['a', 'b', 'c']) await cache.lookup(hash, load);
    await cache.lookup('c', load);
    await cache.lookup('b', load);
    expect(reads).toBe(3);
    await cache.lookup('a', load);
    expect(reads).toBe(4);
  });
});

describe('principal cache, a key read once for the requests that ask meanwhile', () => {
  it('has the requests that ask for a key while it is being read wait for that read', async () => {
    const cache = new PrincipalCache({ now: () => 0 });
    let reads = 0;
    let release!: () => void;
    const load = () => {
      reads++;
      return new Promise<Principal>((resolve) => (release = () => resolve(principal('key_4'))));
    };
    const asking = [cache.lookup('h4', load), cache.lookup('h4', load), cache.lookup('h4', load)];
    release();
    expect(await Promise.all(asking)).toEqual([principal('key_4'), principal('key_4'), principal('key_4')]);
    expect(reads).toBe(1);
    await cache.lookup('h4', load);
    expect(reads).toBe(1); // kept
  });

  it('does not have a request made after a revocation wait for a read that began before it', async () => {
    const cache = new PrincipalCache({ now: () => 0 });
    const releases: Array<() => void> = [];
    const found: Array<Principal | undefined> = [principal('key_5'), undefined];
    let reads = 0;
    const load = () => {
      const answer = found[reads++];
      return new Promise<Principal | undefined>((resolve) => releases.push(() => resolve(answer)));
    };
    const before = cache.lookup('h5', load);
    cache.clear(); // the key was revoked
    const after = cache.lookup('h5', load);
    releases.forEach((release) => release());
    expect(await before).toEqual(principal('key_5'));
    expect(await after).toBeUndefined();
    expect(reads).toBe(2);
  });

  it('lets a failed read fail every request that waited for it, and reads again on the next', async () => {
    const cache = new PrincipalCache({ now: () => 0 });
    let reads = 0;
    const failing = async () => {
      reads++;
      throw new Error('database down');
    };
    await expect(Promise.all([cache.lookup('h6', failing), cache.lookup('h6', failing)])).rejects.toThrow('database down');
    await expect(cache.lookup('h6', failing)).rejects.toThrow('database down');
    expect(reads).toBe(2);
  });
});

import type { Principal } from './access-queries.js';

/**
 * How long a principal read from the database answers for its key: under a second, since a key
 * revoked on another instance must be refused there within 1 s (CONTRACT.md §2). A revocation on
 * this instance clears every process's cache before it is answered (`keysRevoked` in `src/services.ts`, which `apiKeys.revoke` calls).
 */
export const PRINCIPAL_TTL_MS = 900;

interface Entry {
  principal: Principal;
  until: number;
}

/**
 * Principals by key hash, so a busy key costs the database one lookup per `ttlMs` rather than one
 * per request. Unknown and revoked keys are not kept: a new key works at once everywhere. While a
 * key is being read, the requests that ask for it wait for that one read (on a loaded process a
 * read takes long enough for dozens of a busy key's requests to arrive, and each used to read it
 * again).
 */
export class PrincipalCache {
  private readonly entries = new Map<string, Entry>();
  /** Reads under way, by key hash: asked since the last `clear`. */
  private readonly reading = new Map<string, Promise<Principal | undefined>>();
  /** Bumped by `clear`: a lookup that started before it does not store what it read. */
  private generation = 0;
  private readonly ttlMs: number;
  private readonly capacity: number;
  private readonly now: () => number;

  constructor(options: { ttlMs?: number; capacity?: number; now?: () => number } = {}) {
    this.ttlMs = options.ttlMs ?? PRINCIPAL_TTL_MS;
    this.capacity = options.capacity ?? 10_000;
    this.now = options.now ?? (() => performance.now());
  }

  /** The principal of `keyHash`, from memory while fresh, else from `load` (which then answers for `ttlMs` from when it was asked). */
  lookup(keyHash: string, load: (keyHash: string) => Promise<Principal | undefined>): Promise<Principal | undefined> {
    const asked = this.now();
    const hit = this.entries.get(keyHash);
    if (hit && hit.until > asked) return Promise.resolve(hit.principal);
    return this.reading.get(keyHash) ?? this.read(keyHash, asked, load);
  }

  /** Forgets every principal (a key was revoked): the next request of every key reads the database. */
  clear(): void {
    this.generation++;
    this.entries.clear();
    this.reading.clear(); // a request from now on does not wait for a read that began before
  }

  private async read(keyHash: string, asked: number, load: (keyHash: string) => Promise<Principal | undefined>): Promise<Principal | undefined> {
    const generation = this.generation;
    const reading = load(keyHash);
    this.reading.set(keyHash, reading);
    try {
      const principal = await reading;
      if (generation === this.generation) {
        this.entries.delete(keyHash);
        if (principal) {
          this.entries.set(keyHash, { principal, until: asked + this.ttlMs });
          if (this.entries.size > this.capacity) this.entries.delete(this.entries.keys().next().value!);
        }
      }
      return principal;
    } finally {
      if (this.reading.get(keyHash) === reading) this.reading.delete(keyHash);
    }
  }
}

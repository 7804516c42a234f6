import { hash } from 'node:crypto';

/** Permission names (CONTRACT.md §2). */
export const PERMISSIONS = [
  'customers:read',
  'customers:write',
  'points:read',
  'points:write',
  'rewards:read',
  'rewards:write',
  'webhooks:write',
  'keys:write',
] as const;

export type Permission = (typeof PERMISSIONS)[number];

/** What a public key holds: read access that is safe in a browser. */
export const PUBLIC_KEY_PERMISSIONS: Permission[] = ['customers:read', 'points:read', 'rewards:read'];

export const KEY_PREFIXES = { private: 'sk_live_', public: 'pk_live_' } as const;

/** The first of `wanted` that `holder` lacks, or undefined: a key may grant or revoke only what it holds. */
export function missingPermission(holder: readonly string[], wanted: readonly string[]): string | undefined {
  return wanted.find((p) => !holder.includes(p));
}

/** The permissions a new key gets: a public key the fixed read set, a private key its list or all. */
export function permissionsForNewKey(type: 'private' | 'public', requested: readonly Permission[] | null | undefined): Permission[] {
  return type === 'public' ? [...PUBLIC_KEY_PERMISSIONS] : [...new Set(requested ?? PERMISSIONS)];
}

/** The only place a key's hash is computed: stored at creation (`ApiKeyCreated.key_hash`), looked up on every request. */
export function hashApiKey(key: string): string {
  return hash('sha256', key, 'hex');
}

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

import { randomUUID } from 'node:crypto';
import { customAlphabet } from 'nanoid';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const randomId = customAlphabet(BASE62, 20);
const randomSecret = customAlphabet(BASE62, 40);

export const ID_PREFIXES = {
  business: 'biz',
  customer: 'cust',
  transaction: 'txn',
  reward: 'rew',
  redemption: 'red',
  tier: 'tier',
  eventType: 'evtp',
  event: 'evt',
  webhook: 'whk',
  message: 'msg',
  attempt: 'att',
  apiKey: 'key',
  request: 'req',
} as const;

/** What an id names; `storedEvent` is a stored event's own id (`event_id`), a UUID as the log keys it. */
export type IdKind = keyof typeof ID_PREFIXES | 'storedEvent';

/**
 * A prefixed, URL-safe id with 20 random base62 characters: `newId('customer')` → `cust_4fT…`;
 * `newId('storedEvent')` → a random UUID.
 */
export function newId(kind: IdKind): string {
  if (kind === 'storedEvent') return randomUUID();
  return `${ID_PREFIXES[kind]}_${randomId()}`;
}

/** The secret part of an API key (40 base62 characters). */
export function newKeySecret(): string {
  return randomSecret();
}

/** Where ids come from: `newId` in production; made once in `createServices` (tests pass their own) and injected everywhere ids are made. */
export type IdGenerator = (kind: IdKind) => string;

import { createHash } from 'node:crypto';

/** The namespace of due-work ledger ids (a fixed UUID: changing it would change every id). */
const DUE_WORK_NAMESPACE = '5f0c2a43-6a39-4c51-9a0e-3b7d1f0e8c21';
const NAMESPACE_BYTES = Buffer.from(DUE_WORK_NAMESPACE.replaceAll('-', ''), 'hex');

/**
 * The ledger id of a release or expiry: the same on every worker and every retry, so due work
 * decided twice is the same line (CONTRACT.md §13: never from the client's reference space).
 * `repeat` counts earlier expiries of the lot (points a cancelled redemption gave back expire again).
 */
export function dueTransactionId(lot: string, kind: 'release' | 'expire', dueAt: string, repeat = 0): string {
  const name = repeat === 0 ? `${lot}:${kind}:${dueAt}` : `${lot}:${kind}:${dueAt}:${repeat}`;
  return `txn_${uuidV5Hex(name)}`;
}

/**
 * RFC 9562 UUIDv5 of `name` in the namespace, as 32 hex digits: SHA-1 of the namespace's bytes and
 * the name's UTF-8, its version and variant bits set. The crypto module's hash directly: the uuid
 * package's v5 cost a lifecycle run about 10 µs per id (a tenth of the decision).
 */
function uuidV5Hex(name: string): string {
  const bytes = createHash('sha1').update(NAMESPACE_BYTES).update(name, 'utf8').digest();
  bytes[6] = (bytes[6]! & 0x0f) | 0x50;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  return bytes.toString('hex', 0, 16);
}

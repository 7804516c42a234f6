import { v5 as uuidv5 } from 'uuid';

/** The namespace of due-work ledger ids (a fixed UUID: changing it would change every id). */
const DUE_WORK_NAMESPACE = '5f0c2a43-6a39-4c51-9a0e-3b7d1f0e8c21';

/**
 * The ledger id of a release or expiry: the same on every worker and every retry, so due work
 * decided twice is the same line (CONTRACT.md §13: never from the client's reference space).
 * `repeat` counts earlier expiries of the lot (points a cancelled redemption gave back expire again).
 */
export function dueTransactionId(lot: string, kind: 'release' | 'expire', dueAt: string, repeat = 0): string {
  const name = repeat === 0 ? `${lot}:${kind}:${dueAt}` : `${lot}:${kind}:${dueAt}:${repeat}`;
  return `txn_${uuidv5(name, DUE_WORK_NAMESPACE).replaceAll('-', '')}`;
}

import { v5 } from 'uuid';
import { describe, expect, it } from 'vitest';
import { dueTransactionId } from '../../src/commands/customer/due-ids.js';

describe('due-work ledger ids', () => {
  it('are txn_ + the UUIDv5 (RFC 9562) of lot:kind:due_instant[:n] in the fixed namespace, as the uuid package makes it', () => {
    const namespace = '5f0c2a43-6a39-4c51-9a0e-3b7d1f0e8c21';
    const cases: Array<[string, 'release' | 'expire', string, number]> = [
      ['txn_0f3a', 'expire', '2026-03-11T12:00:00.000Z', 0],
      ['evt_ünïcode', 'release', '2026-03-01T00:00:00.000Z', 0],
      ['txn_0f3a', 'expire', '2026-03-11T12:00:00.000Z', 2],
    ];
    for (const [lot, kind, at, repeat] of cases) {
      const name = repeat === 0 ? `${lot}:${kind}:${at}` : `${lot}:${kind}:${at}:${repeat}`;
      expect(dueTransactionId(lot, kind, at, repeat)).toBe(`txn_${v5(name, namespace).replaceAll('-', '')}`);
    }
    expect(dueTransactionId('txn_abc', 'expire', '2026-01-01T00:00:00.000Z')).toBe('txn_545c43b812a0553fab53e6ef92b37403');
  });
});

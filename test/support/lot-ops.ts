import fc from 'fast-check';

/** One step of a random lot history, as the lot property tests draw them (days from a fixed T0). */
export type LotOp =
  | { kind: 'credit'; amount: number; pendingFor: number | null; expiresIn: number | null }
  | { kind: 'debit'; amount: number }
  | { kind: 'release' | 'expire' | 'return'; pick: number }
  | { kind: 'reverse'; pick: number; amount: number };

/** Credits (some pending, some expiring), debits, releases, expiries, returns and reversals. */
export const lotOp: fc.Arbitrary<LotOp> = fc.oneof(
  fc.record({
    kind: fc.constant('credit' as const),
    amount: fc.integer({ min: 1, max: 1000 }),
    pendingFor: fc.option(fc.integer({ min: 1, max: 10 }), { nil: null }),
    expiresIn: fc.option(fc.integer({ min: 11, max: 40 }), { nil: null }),
  }),
  fc.record({ kind: fc.constant('debit' as const), amount: fc.integer({ min: 1, max: 1500 }) }),
  fc.record({ kind: fc.constantFrom('release' as const, 'expire' as const, 'return' as const), pick: fc.nat() }),
  fc.record({ kind: fc.constant('reverse' as const), pick: fc.nat(), amount: fc.integer({ min: 1, max: 1200 }) }),
);

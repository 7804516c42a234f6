import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { lotOp } from '../support/lot-ops.js';
import {
  applyReversal,
  consumptionOrder,
  creditLot,
  dueWork,
  expireLot,
  type Lot,
  nextExpiring,
  noticeLot,
  pending,
  planDebit,
  planReversal,
  releaseLot,
  returnShares,
  type Share,
  spendable,
  takeShares,
} from '../../src/events/lots.js';

const DAY = 86_400_000;
const T0 = Date.parse('2026-11-24T00:00:00.000Z');
const iso = (ms: number) => new Date(ms).toISOString();
const lot = (transactionId: string, amount: number, options: { created?: number; availableAt?: number; expiresAt?: number } = {}) => ({
  transactionId,
  amount,
  createdAt: iso(T0 + (options.created ?? 0)),
  availableAt: options.availableAt === undefined ? null : iso(T0 + options.availableAt),
  expiresAt: options.expiresAt === undefined ? null : iso(T0 + options.expiresAt),
});

describe('lots (CONTRACT.md §13)', () => {
  it('debits the soonest-expiring available lots first, never-expiring ones last, then the oldest', () => {
    let lots = creditLot([], lot('txn_never', 50));
    lots = creditLot(lots, lot('txn_late', 30, { created: 1, expiresAt: 30 * DAY }));
    lots = creditLot(lots, lot('txn_soon', 20, { created: 2, expiresAt: 10 * DAY }));
    lots = creditLot(lots, lot('txn_pending', 100, { created: 3, availableAt: DAY }));
    expect(planDebit(lots, 60)).toEqual([
      { transaction_id: 'txn_soon', amount: 20 },
      { transaction_id: 'txn_late', amount: 30 },
      { transaction_id: 'txn_never', amount: 10 },
    ]);
    // Pending points are not spendable.
    expect(spendable(lots)).toBe(100);
    expect(pending(lots)).toBe(100);
    expect(planDebit(lots, 101)).toBeNull();
  });

  it('reverses from the credit first, then from what of it expired, then from the balance', () => {
    let lots = creditLot([], lot('txn_a', 100, { expiresAt: DAY }));
    lots = creditLot(lots, lot('txn_b', 50, { created: 1 }));
    lots = takeShares(lots, planDebit(lots, 70)!); // 70 of txn_a spent
    lots = expireLot(lots, 'txn_a').lots; // its last 30 expired
    expect(planReversal(lots, 'txn_a', 80)).toEqual({ fromLot: 0, fromExpired: 30, fromBalance: [{ transaction_id: 'txn_b', amount: 50 }] });
    expect(planReversal(lots, 'txn_a', 81)).toBe('insufficient_points');
    expect(planReversal(lots, 'txn_a', 101)).toBe('reversal_exceeds_credit');
    const plan = planReversal(lots, 'txn_a', 40);
    expect(plan).toEqual({ fromLot: 0, fromExpired: 30, fromBalance: [{ transaction_id: 'txn_b', amount: 10 }] });
    lots = applyReversal(lots, 'txn_a', plan as Exclude<typeof plan, string>);
    expect(spendable(lots)).toBe(40);
    // 40 of the credit's 100 are reversed, 30 of them out of the lot itself.
    expect(lots.find((l) => l.transactionId === 'txn_a')).toMatchObject({ reversed: 40, reversedFromLot: 30, expired: 0 });
    expect(planReversal(lots, 'txn_a', 61)).toBe('reversal_exceeds_credit');
  });

  it('lists due work in due order: releases, then notices, then expiries; a returned share of an expired lot expires again', () => {
    let lots = creditLot([], lot('txn_p', 10, { availableAt: DAY, expiresAt: 5 * DAY }));
    lots = creditLot(lots, lot('txn_e', 20, { created: 1, expiresAt: 2 * DAY }));
    expect(dueWork(lots, new Date(T0 + DAY), 7)).toEqual([
      { kind: 'notice', transactionId: 'txn_e', at: iso(T0 + 2 * DAY - 7 * DAY) },
      { kind: 'notice', transactionId: 'txn_p', at: iso(T0 + 5 * DAY - 7 * DAY) },
      { kind: 'release', transactionId: 'txn_p', at: iso(T0 + DAY) },
    ]);
    lots = releaseLot(lots, 'txn_p');
    const spent = planDebit(lots, 25)!;
    lots = takeShares(lots, spent);
    lots = expireLot(lots, 'txn_e').lots; // nothing left in it: 0 expire
    lots = returnShares(lots, spent); // the redemption is cancelled after txn_e's expiry
    expect(dueWork(lots, new Date(T0 + 3 * DAY), 2).map((w) => `${w.kind} ${w.transactionId}`)).toEqual(['expire txn_e', 'notice txn_p']);
    expect(nextExpiring(lots)).toEqual({ amount: 20, expiresAt: iso(T0 + 2 * DAY) });
  });

  it('keeps every lot whole and the balance equal to its available lots under any sequence of credits, debits, releases, expiries, reversals and returns', () => {
    fc.assert(
      fc.property(fc.array(lotOp, { maxLength: 60 }), (ops) => {
        let lots: Lot[] = [];
        let balance = 0;
        let waiting = 0;
        const debits: Share[][] = [];
        ops.forEach((o, i) => {
          const pickFrom = <T>(items: T[], pick: number) => (items.length === 0 ? undefined : items[pick % items.length]);
          switch (o.kind) {
            case 'credit': {
              lots = creditLot(lots, lot(`txn_${i}`, o.amount, { created: i, availableAt: o.pendingFor === null ? undefined : o.pendingFor * DAY, expiresAt: o.expiresIn === null ? undefined : o.expiresIn * DAY }));
              if (o.pendingFor === null) balance += o.amount;
              else waiting += o.amount;
              break;
            }
            case 'debit': {
              const shares = planDebit(lots, o.amount);
              if (shares === null) {
                expect(o.amount).toBeGreaterThan(balance);
                break;
              }
              expectConsumptionOrder(lots, shares, o.amount);
              lots = takeShares(lots, shares);
              debits.push(shares);
              balance -= o.amount;
              break;
            }
            case 'release': {
              const target = pickFrom(lots.filter((l) => l.status === 'pending'), o.pick);
              if (!target) break;
              lots = releaseLot(lots, target.transactionId);
              waiting -= target.remaining;
              balance += target.remaining;
              break;
            }
            case 'expire': {
              const target = pickFrom(lots.filter((l) => l.status === 'available' && l.remaining > 0), o.pick);
              if (!target) break;
              const expired = expireLot(lots, target.transactionId);
              lots = expired.lots;
              balance -= expired.amount;
              break;
            }
            case 'return': {
              const shares = debits.splice(o.pick % Math.max(1, debits.length), 1)[0];
              if (!shares) break;
              lots = returnShares(lots, shares);
              balance += shares.reduce((sum, s) => sum + s.amount, 0);
              break;
            }
            case 'reverse': {
              const target = pickFrom(lots, o.pick);
              if (!target) break;
              const plan = planReversal(lots, target.transactionId, o.amount);
              if (plan === 'reversal_exceeds_credit') {
                expect(o.amount).toBeGreaterThan(target.amount - target.reversed);
                break;
              }
              if (plan === 'insufficient_points') break;
              lots = applyReversal(lots, target.transactionId, plan);
              if (target.status === 'pending') waiting -= plan.fromLot;
              else balance -= plan.fromLot;
              balance -= plan.fromBalance.reduce((sum, s) => sum + s.amount, 0);
              break;
            }
          }
          expect(spendable(lots)).toBe(balance);
          expect(pending(lots)).toBe(waiting);
          for (const l of lots) {
            expect(Math.min(l.remaining, l.spent, l.expired, l.reversedFromLot)).toBeGreaterThanOrEqual(0);
            expect(l.remaining + l.spent + l.expired + l.reversedFromLot).toBe(l.amount);
            expect(l.reversed).toBeLessThanOrEqual(l.amount);
          }
        });
      }),
      { numRuns: 300 },
    );
  });

  it('lists a notice exactly when its expiry is within the notice days of now, at that instant too', () => {
    const expiring = fc.record({ expiresIn: fc.integer({ min: 1, max: 40 * 24 }), noticed: fc.boolean() });
    fc.assert(
      fc.property(fc.array(expiring, { minLength: 1, maxLength: 20 }), fc.integer({ min: 0, max: 14 }), fc.nat(40 * 24), fc.boolean(), (raw, noticeDays, hour, onTheDot) => {
        const HOUR = 3_600_000;
        let lots: Lot[] = [];
        raw.forEach((r, i) => {
          lots = creditLot(lots, lot(`txn_${i}`, 10, { created: i, expiresAt: r.expiresIn * HOUR }));
          if (r.noticed) lots = noticeLot(lots, `txn_${i}`);
        });
        // Now, or exactly the instant one lot's notice falls due.
        const at = onTheDot ? T0 + raw[hour % raw.length]!.expiresIn * HOUR - noticeDays * DAY : T0 + hour * HOUR;
        const notices = dueWork(lots, new Date(at), noticeDays).filter((w) => w.kind === 'notice');
        const expected = lots
          .filter((l) => !l.noticed && Date.parse(l.expiresAt!) > at && Date.parse(l.expiresAt!) - noticeDays * DAY <= at)
          .map((l) => ({ kind: 'notice', transactionId: l.transactionId, at: iso(Date.parse(l.expiresAt!) - noticeDays * DAY) }));
        const order = (w: { at: string; transactionId: string }) => `${w.at} ${w.transactionId}`;
        expect([...notices].sort((a, b) => (order(a) < order(b) ? -1 : 1))).toEqual([...expected].sort((a, b) => (order(a) < order(b) ? -1 : 1)));
      }),
      { numRuns: 500 },
    );
  });
});

/** The shares are available lots in consumption order, each but the last emptied. */
function expectConsumptionOrder(lots: Lot[], shares: Share[], amount: number) {
  const available = lots.filter((l) => l.status === 'available' && l.remaining > 0).sort(consumptionOrder);
  expect(shares.map((s) => s.transaction_id)).toEqual(available.slice(0, shares.length).map((l) => l.transactionId));
  shares.slice(0, -1).forEach((s, i) => expect(s.amount).toBe(available[i]!.remaining));
  expect(shares.reduce((sum, s) => sum + s.amount, 0)).toBe(amount);
}

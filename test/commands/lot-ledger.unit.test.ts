import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type LotOp, lotOp } from '../support/lot-ops.js';
import { idHash, LotLedger, type StoredLot } from '../../src/commands/customer/lot-ledger.js';
import { customerDecider } from '../../src/commands/customer/customer-decider.js';
import { cachedWeight } from '../../src/commands/customer/customer-state.js';
import type { CreditSeries } from '../../src/commands/customer/rolling-tiers.js';
import {
  applyReversal,
  creditLot,
  dueWork,
  expireLot,
  type Lot,
  noticeLot,
  planDebit,
  planReversal,
  noticeDue,
  releaseLot,
  returnShares,
  type Share,
  spendable,
  takeShares,
} from '../../src/events/lots.js';

const DAY = 86_400_000;
const T0 = Date.parse('2026-11-24T00:00:00.000Z');
const iso = (ms: number) => new Date(ms).toISOString();

type Op = LotOp | { kind: 'notice'; pick: number } | { kind: 'due'; day: number };

const op: fc.Arbitrary<Op> = fc.oneof(
  lotOp,
  fc.record({ kind: fc.constant('notice' as const), pick: fc.nat() }),
  fc.record({ kind: fc.constant('due' as const), day: fc.integer({ min: 0, max: 50 }) }),
);

const series = (credits: CreditSeries) => Array.from({ length: credits.length }, (_, i) => [credits.times[i], credits.amounts[i]]);
/** When the lots' next due work falls due, from every lot: the earliest release, expiry or notice. */
const nextDue = (lots: Lot[], noticeDays: number) =>
  lots
    .flatMap((l) => [
      l.status === 'pending' ? l.availableAt : null,
      l.remaining > 0 ? l.expiresAt : null,
      l.remaining > 0 && l.expiresAt !== null && !l.noticed ? noticeDue(l.expiresAt, noticeDays) : null,
    ])
    .filter((at): at is string => at !== null)
    .sort()[0] ?? null;

/** A lot history as plain arrays (what lots.ts defines) and as a ledger, with the debits that can still be returned. */
interface History {
  lots: Lot[];
  ledger: LotLedger;
  debits: Share[][];
}

const START: History = { lots: [], ledger: LotLedger.EMPTY, debits: [] };

/**
 * The history after op `o` (the `i`-th drawn), checking on the way that the ledger plans and lists
 * due work as the plain functions do on its lots; the history it was made from is left as it was.
 */
function step({ lots, ledger, debits }: History, o: Op, i: number): History {
  const pick = <T>(items: T[], n: number) => (items.length === 0 ? undefined : items[n % items.length]);
  switch (o.kind) {
    case 'credit': {
      const made = {
        transactionId: `txn_${String(i).padStart(3, '0')}`,
        amount: o.amount,
        createdAt: iso(T0 + i),
        availableAt: o.pendingFor === null ? null : iso(T0 + o.pendingFor * DAY),
        expiresAt: o.expiresIn === null ? null : iso(T0 + o.expiresIn * DAY),
      };
      return { lots: creditLot(lots, made), ledger: ledger.credit(made), debits };
    }
    case 'debit': {
      const shares = planDebit(lots, o.amount);
      expect(ledger.planDebit(o.amount)).toEqual(shares);
      if (!shares) break;
      return { lots: takeShares(lots, shares), ledger: ledger.takeShares(shares), debits: [...debits, shares] };
    }
    case 'release': {
      const target = pick(lots.filter((l) => l.status === 'pending'), o.pick);
      if (!target) break;
      return { lots: releaseLot(lots, target.transactionId), ledger: ledger.release(target.transactionId), debits };
    }
    case 'notice': {
      const target = pick(lots.filter((l) => l.remaining > 0 && l.expiresAt !== null), o.pick);
      if (!target) break;
      return { lots: noticeLot(lots, target.transactionId), ledger: ledger.notice(target.transactionId), debits };
    }
    case 'expire': {
      const target = pick(lots.filter((l) => l.status === 'available' && l.remaining > 0), o.pick);
      if (!target) break;
      return { lots: expireLot(lots, target.transactionId).lots, ledger: ledger.expire(target.transactionId), debits };
    }
    case 'return': {
      const index = o.pick % Math.max(1, debits.length);
      const shares = debits[index];
      if (!shares) break;
      return { lots: returnShares(lots, shares), ledger: ledger.returnShares(shares), debits: debits.filter((_, k) => k !== index) };
    }
    case 'reverse': {
      const target = pick(lots, o.pick);
      if (!target) break;
      const plan = planReversal(lots, target.transactionId, o.amount);
      expect(ledger.planReversal(target.transactionId, o.amount)).toEqual(plan);
      if (typeof plan === 'string') break;
      return { lots: applyReversal(lots, target.transactionId, plan), ledger: ledger.reverse(target.transactionId, plan), debits };
    }
    case 'due': {
      const now = new Date(T0 + o.day * DAY);
      // In the same order too: ties go oldest first, and the lots were made in time order here.
      expect(ledger.dueWork(now, 7)).toEqual(dueWork(lots, now, 7));
      break;
    }
  }
  return { lots, ledger, debits };
}

/** What a ledger answers equals what the plain functions answer on its lots. */
function expectSame({ lots, ledger }: History): void {
  expect(ledger.values()).toEqual(lots);
  expect(ledger.planDebit(spendable(lots))).toEqual(planDebit(lots, spendable(lots))); // the whole consumption order
  expect(ledger.nextDue(7)).toBe(nextDue(lots, 7));
  expect(series(ledger.credits())).toEqual(lots.map((l) => [Date.parse(l.createdAt), l.amount - l.reversed]));
}

describe('LotLedger: the customer state\'s persistent lots', () => {
  it('answers exactly what the plain lot functions answer on an array, for any history', () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 60 }), (ops) => {
        let history = START;
        ops.forEach((o, i) => {
          history = step(history, o, i);
          expectSame(history);
        });
      }),
      { numRuns: 300 },
    );
  });

  it('answers so for every ledger of a history that branches, each from its own lots, the orders shared or not', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.nat(), op), { maxLength: 60 }), (steps) => {
        const histories = [START];
        steps.forEach(([from, o], i) => histories.push(step(histories[from % histories.length]!, o, i)));
        // Checked once all are made: a later branch must not have changed an earlier ledger's orders.
        for (const history of histories) {
          expectSame(history);
          for (const day of [0, 12, 25, 45]) expect(history.ledger.dueWork(new Date(T0 + day * DAY), 7)).toEqual(dueWork(history.lots, new Date(T0 + day * DAY), 7));
        }
      }),
      { numRuns: 200 },
    );
  });

  it('leaves the ledger it was made from as it was', () => {
    const made = { amount: 10, createdAt: iso(T0), availableAt: null, expiresAt: iso(T0 + 30 * DAY) };
    const before = LotLedger.EMPTY.credit({ ...made, transactionId: 'txn_a' });
    const after = before.credit({ ...made, transactionId: 'txn_b' }).takeShares([{ transaction_id: 'txn_a', amount: 4 }]).expire('txn_b');
    expect(before.values()).toEqual([expect.objectContaining({ transactionId: 'txn_a', remaining: 10, spent: 0 })]);
    expect(before.dueWork(new Date(T0 + 31 * DAY), 7)).toEqual([{ kind: 'expire', transactionId: 'txn_a', at: made.expiresAt }]);
    expect(after.values().map((l) => [l.transactionId, l.remaining, l.status])).toEqual([
      ['txn_a', 6, 'available'],
      ['txn_b', 0, 'expired'],
    ]);
  });

  it('goes into a snapshot as the array of its lots (each an array of its fields) and comes back the same', () => {
    let ledger = LotLedger.EMPTY;
    for (let i = 0; i < 5; i++) ledger = ledger.credit({ transactionId: `txn_${i}`, amount: 10 + i, createdAt: iso(T0 + i), availableAt: i === 2 ? iso(T0 + DAY) : null, expiresAt: null });
    ledger = ledger.takeShares([{ transaction_id: 'txn_0', amount: 10 }]);
    const json: StoredLot[] = JSON.parse(JSON.stringify({ lots: ledger })).lots;
    expect(json[0]).toEqual(['txn_0', 10, 0, 10, 0, 0, 0, 'spent', null, null, iso(T0), 0, 0]);
    expect(json[2]).toEqual(['txn_2', 12, 12, 0, 0, 0, 0, 'pending', iso(T0 + DAY), null, iso(T0 + 2), 0, 0]);
    const back = LotLedger.fromSnapshot(json);
    expect(back.values()).toEqual(ledger.values());
    expect(back.planDebit(38)).toEqual([11, 13, 14].map((amount, i) => ({ transaction_id: `txn_${[1, 3, 4][i]}`, amount })));
    expect(back.planDebit(39)).toBeNull(); // txn_2 is pending
    expect(back.nextDue(7)).toBe(iso(T0 + DAY));
  });
});


describe('LotLedger: the credits rolling qualification counts', () => {
  it('are each ledger\'s own, in the order made, however many ledgers were made from one', () => {
    const step = fc.record({ from: fc.nat(), amount: fc.integer({ min: 1, max: 100 }), late: fc.integer({ min: -3, max: 3 }), look: fc.boolean() });
    fc.assert(
      fc.property(fc.array(step, { maxLength: 40 }), (steps) => {
        const ledgers = [LotLedger.EMPTY];
        steps.forEach(({ from, amount, late, look }, i) => {
          const base = ledgers[from % ledgers.length]!;
          if (look) base.credits(); // the series exists, so the credit appends to it (to arrays another ledger may share)
          ledgers.push(base.credit({ transactionId: `txn_${i}`, amount, createdAt: iso(T0 + i * 1_000 + late * 2_500), availableAt: null, expiresAt: null }));
        });
        for (const ledger of ledgers) {
          const expected = ledger.values().map((l) => [Date.parse(l.createdAt), l.amount - l.reversed]);
          const credits = ledger.credits();
          expect(series(credits)).toEqual(expected);
          expect(credits.sums.slice(0, credits.length + 1)).toEqual(expected.reduce((sums, [, amount]) => [...sums, sums.at(-1)! + amount!], [0]));
          expect(credits.ordered).toBe(expected.every(([t], i) => i === 0 || t! >= expected[i - 1]![0]!));
        }
      }),
      { numRuns: 300 },
    );
  });

  it('share their arrays between two ledgers made by the same credit from one, and not with a third made by another', () => {
    const lot = (id: string, amount: number, ms: number) => ({ transactionId: id, amount, createdAt: iso(T0 + ms), availableAt: null, expiresAt: null });
    const base = LotLedger.EMPTY.credit(lot('txn_a', 10, 0));
    base.credits();
    const once = base.credit(lot('txn_b', 20, 1_000)).credits();
    const again = base.credit(lot('txn_b', 20, 1_000)).credits(); // a decision's events folded onto the state decided on, twice
    const other = base.credit(lot('txn_c', 30, 500)).credits();
    expect(again.times).toBe(once.times);
    expect(series(again)).toEqual([[T0, 10], [T0 + 1_000, 20]]);
    expect(other.times).not.toBe(once.times);
    expect(series(other)).toEqual([[T0, 10], [T0 + 500, 30]]);
    expect(series(once)).toEqual([[T0, 10], [T0 + 1_000, 20]]);
    expect(series(base.credits())).toEqual([[T0, 10]]);
  });
});

describe('LotLedger: finding a lot by its id', () => {
  it('finds lots made before its first search and after it, in ledgers made either way', () => {
    const made = (i: number) => ({ transactionId: `txn_${i}`, amount: 5, createdAt: iso(T0 + i), availableAt: null, expiresAt: null });
    let ledger = LotLedger.fromSnapshot(JSON.parse(JSON.stringify(LotLedger.of([0, 1, 2].map((i) => ({ ...made(i), remaining: 5, spent: 0, expired: 0, reversed: 0, reversedFromLot: 0, status: 'available' as const, noticed: false, expiries: 0 }))))));
    ledger = ledger.credit(made(3));
    const searched = ledger.expire('txn_1'); // the first search: its positions are built here
    const after = searched.credit(made(4)).credit(made(5));
    expect([0, 1, 2, 3, 4, 5].map((i) => after.get(`txn_${i}`)?.createdAt)).toEqual([0, 1, 2, 3, 4, 5].map((i) => iso(T0 + i)));
    expect(after.get('txn_1')?.status).toBe('expired');
    expect(after.takeShares([{ transaction_id: 'txn_5', amount: 2 }]).get('txn_5')?.remaining).toBe(3);
    // The ledger before the search finds them too, and equals one made without searching.
    expect(ledger.get('txn_2')?.transactionId).toBe('txn_2');
    expect(ledger).toEqual(LotLedger.of(ledger.values()));
  });

  it('finds each of two ids whose hashes collide, and neither where only the other was made', () => {
    // Two ids under one FNV-1a hash (found by a birthday search over txn_ + base-36 counters).
    const [a, b] = ['txn_00000000000000002rnw', 'txn_0000000000000000jpba'];
    expect(idHash(a)).toBe(idHash(b));
    const made = (id: string) => ({ transactionId: id, amount: 5, createdAt: iso(T0), availableAt: null, expiresAt: null });
    const onlyA = LotLedger.EMPTY.credit(made(a));
    expect(onlyA.get(a)?.transactionId).toBe(a);
    expect(onlyA.get(b)).toBeUndefined();
    const both = onlyA.credit(made(b)).expire(a);
    expect(both.get(a)).toMatchObject({ transactionId: a, remaining: 0 });
    expect(both.get(b)).toMatchObject({ transactionId: b, remaining: 5 });
    expect(both.values().map((l) => l.transactionId)).toEqual([a, b]);
    // The ledger before is untouched by what came after it.
    expect(onlyA.get(b)).toBeUndefined();
    expect(onlyA.get(a)?.remaining).toBe(5);
    // A snapshot's lots come back the same, every field of each, from JSON.
    const revived = LotLedger.fromSnapshot(JSON.parse(JSON.stringify(both)));
    expect(revived.values()).toEqual(both.values());
    expect(revived.get(b)).toEqual(both.get(b));
  });
});

describe('cachedWeight: what a state weighs in the state cache', () => {
  it('is a customer state\'s lots, other lines and redemptions plus one, and one for any other state', () => {
    let state = customerDecider.initialState();
    expect(cachedWeight(state)).toBe(1);
    for (let i = 0; i < 3; i++) state = { ...state, lots: state.lots.credit({ transactionId: `txn_${i}`, amount: 5, createdAt: iso(T0), availableAt: null, expiresAt: null }) };
    expect(cachedWeight(state)).toBe(4);
    // Other ledger lines and redemptions weigh as lots.
    state = { ...state, otherLines: state.otherLines.set('txn_debit', 'not_credit'), redemptions: state.redemptions.set('red_1', { rewardId: 'rew_1', rewardType: 'digital', pointsCost: 5, cancelled: false, lots: [] }) };
    expect(cachedWeight(state)).toBe(6);
    expect(cachedWeight({ plan: 'free' })).toBe(1);
  });
});

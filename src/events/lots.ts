/**
 * Point lots (CONTRACT.md §13), pure. Every credit makes a lot; debits consume available lots
 * soonest-expiring first (lots without expiry last), then oldest first. The customer decider plans
 * with these functions and its events record what was decided (which lots a debit took from), so
 * a replay applies exactly that, whatever the planning rules become later.
 *
 * Per lot, always: `amount = remaining + spent + expired + reversedFromLot`, each part ≥ 0, and
 * `reversed` (all reversals of the credit, wherever their points came from) ≤ `amount`.
 */
import { smallestFirst } from '../smallest-first.js';

const DAY_MS = 86_400_000;

/** When the `points.expiring` notice of a lot expiring at `expiresAt` falls due (ISO). */
export function noticeDue(expiresAt: string, noticeDays: number): string {
  return new Date(Date.parse(expiresAt) - noticeDays * DAY_MS).toISOString();
}

export type LotStatus = 'pending' | 'available' | 'spent' | 'expired';

export interface Lot {
  /** The credit's id (`txn_…` or `evt_…`): a lot is named by the transaction that made it. */
  transactionId: string;
  /** Points credited. */
  amount: number;
  /** Points still in the lot: spendable once available, waiting while pending. */
  remaining: number;
  /** Points debits took from it. */
  spent: number;
  /** Points that left it by expiry (less any a reversal took back out of lifetime_expired). */
  expired: number;
  /** Points reversals of this credit took, wherever from: at most `amount`. */
  reversed: number;
  /** The part of `reversed` taken out of the lot itself (its remaining first, then its expired part). */
  reversedFromLot: number;
  status: LotStatus;
  /** While pending: when it becomes spendable (ISO). */
  availableAt: string | null;
  /** When its remaining points expire (ISO); null: never. */
  expiresAt: string | null;
  createdAt: string;
  /** Its `points.expiring` notice was sent. */
  noticed: boolean;
  /** How many times it expired (a cancelled redemption's points can come back to it and expire again). */
  expiries: number;
}

/** Points one debit (or return) took from (or gives back to) one lot: the events' `LotShare`. */
export interface Share {
  transaction_id: string;
  amount: number;
}

export interface NewLot {
  transactionId: string;
  amount: number;
  createdAt: string;
  availableAt: string | null;
  expiresAt: string | null;
}

/** Due work on a customer's lots at a moment, in due order. */
export interface DueWork {
  kind: 'release' | 'notice' | 'expire';
  transactionId: string;
  /** When it became due (ISO). */
  at: string;
}

/** Whether a reversal cannot be made, and why (the contract's error codes). */
export type ReversalRefusal = 'reversal_exceeds_credit' | 'insufficient_points';

export interface ReversalPlan {
  /** From the credit's own lot (pending or available). */
  fromLot: number;
  /** From the part of the credit that already expired: out of lifetime_expired, not the balance. */
  fromExpired: number;
  /** The rest, from the balance: the other available lots, in consumption order. */
  fromBalance: Share[];
}

/**
 * The new lot is one object literal of every field, in one order: a customer's state keeps it for
 * as long as the customer is held in memory. (V8 makes `{ ...lot, remaining, … }` — five fields
 * spread, eight added after — an object of about 570 bytes; this one is about 140. It was also
 * slow: 20–30 µs per credit on Node 20, the largest cost of a projection rebuild and of the bulk
 * seeding; docs/performance.md, "Projection rebuild (session 7)".)
 */
export function creditLot(lots: readonly Lot[], lot: NewLot): Lot[] {
  return [
    ...lots,
    {
      transactionId: lot.transactionId,
      amount: lot.amount,
      remaining: lot.amount,
      spent: 0,
      expired: 0,
      reversed: 0,
      reversedFromLot: 0,
      status: lot.availableAt === null ? 'available' : 'pending',
      availableAt: lot.availableAt,
      expiresAt: lot.expiresAt,
      createdAt: lot.createdAt,
      noticed: false,
      expiries: 0,
    },
  ];
}

/** The balance: points in available lots. */
export function spendable(lots: readonly Lot[]): number {
  return lots.reduce((sum, lot) => (lot.status === 'available' ? sum + lot.remaining : sum), 0);
}

/** Points not yet spendable. */
export function pending(lots: readonly Lot[]): number {
  return lots.reduce((sum, lot) => (lot.status === 'pending' ? sum + lot.remaining : sum), 0);
}

/** Consumption order: soonest expiry first, never-expiring last, then oldest, then by id (stable). */
export function consumptionOrder(a: Lot, b: Lot): number {
  if (a.expiresAt !== b.expiresAt) {
    if (a.expiresAt === null) return 1;
    if (b.expiresAt === null) return -1;
    return a.expiresAt < b.expiresAt ? -1 : 1;
  }
  return oldestFirst(a, b);
}

/** By creation, then by id. */
export function oldestFirst(a: Lot, b: Lot): number {
  if (a.createdAt !== b.createdAt) return a.createdAt < b.createdAt ? -1 : 1;
  return a.transactionId < b.transactionId ? -1 : a.transactionId > b.transactionId ? 1 : 0;
}

/** The shares a debit of `amount` takes, in consumption order; null when the balance is short. */
export function planDebit(lots: readonly Lot[], amount: number, except?: string): Share[] | null {
  return amount === 0 ? [] : sharesFrom(smallestFirst(lots.filter(isSpendable), consumptionOrder), amount, except);
}

/** Whether a debit may take from the lot: available, with points left. */
export function isSpendable(lot: Lot): boolean {
  return lot.status === 'available' && lot.remaining > 0;
}

/** The shares a debit of `amount` takes from spendable `lots` given in consumption order, sparing lot `except`; null when they hold too few. */
export function sharesFrom(lots: Iterable<Lot>, amount: number, except?: string): Share[] | null {
  const shares: Share[] = [];
  let left = amount;
  if (left === 0) return shares;
  for (const lot of lots) {
    if (lot.transactionId === except) continue;
    const taken = Math.min(left, lot.remaining);
    shares.push({ transaction_id: lot.transactionId, amount: taken });
    left -= taken;
    if (left === 0) break;
  }
  return left === 0 ? shares : null;
}

/** Applies a debit's shares (as its event recorded them). */
export function takeShares(lots: readonly Lot[], shares: readonly Share[]): Lot[] {
  return withShares(lots, shares, (lot, amount) => {
    if (amount > lot.remaining) throw new Error(`lot ${lot.transactionId} holds ${lot.remaining}, a debit took ${amount}`);
    const remaining = lot.remaining - amount;
    return { ...lot, remaining, spent: lot.spent + amount, status: remaining === 0 ? 'spent' : lot.status };
  });
}

/**
 * Gives a cancelled redemption's shares back to the lots they came from. A lot that has expired
 * meanwhile gets them back as available points past their expiry: due work expires them again at
 * once (`dueWork`).
 */
export function returnShares(lots: readonly Lot[], shares: readonly Share[]): Lot[] {
  return withShares(lots, shares, (lot, amount) => {
    if (amount > lot.spent) throw new Error(`lot ${lot.transactionId} had ${lot.spent} spent, ${amount} came back`);
    return { ...lot, remaining: lot.remaining + amount, spent: lot.spent - amount, status: 'available' };
  });
}

/** A pending lot becomes spendable. */
export function releaseLot(lots: readonly Lot[], transactionId: string): Lot[] {
  return withLot(lots, transactionId, (lot) => {
    if (lot.status !== 'pending') throw new Error(`lot ${transactionId} is ${lot.status}, not pending`);
    return { ...lot, status: lot.remaining === 0 ? 'spent' : 'available', availableAt: null };
  });
}

/** A lot's remaining points expire; `amount` is how many left the balance. */
export function expireLot(lots: readonly Lot[], transactionId: string): { lots: Lot[]; amount: number } {
  let amount = 0;
  const next = withLot(lots, transactionId, (lot) => {
    amount = lot.remaining;
    return { ...lot, remaining: 0, expired: lot.expired + lot.remaining, status: 'expired', expiries: lot.expiries + 1 };
  });
  return { lots: next, amount };
}

/** Its `points.expiring` notice was sent. */
export function noticeLot(lots: readonly Lot[], transactionId: string): Lot[] {
  return withLot(lots, transactionId, (lot) => ({ ...lot, noticed: true }));
}

/**
 * How a reversal of `amount` of credit `transactionId` is taken (CONTRACT.md §13): from the credit's
 * lot first, then from the part of it that expired, the rest from the balance. Refused beyond the
 * credit's unreversed amount, or when the balance is short.
 */
export function planReversal(lots: readonly Lot[], transactionId: string, amount: number): ReversalPlan | ReversalRefusal {
  const lot = lots.find((l) => l.transactionId === transactionId);
  if (!lot) throw new Error(`no lot ${transactionId}`);
  return reversalOf(lot, amount, (rest) => planDebit(lots, rest, transactionId));
}

/** `planReversal` of the credit whose lot is `lot`, the rest planned by `planRest` (a debit that spares that lot). */
export function reversalOf(lot: Lot, amount: number, planRest: (rest: number) => Share[] | null): ReversalPlan | ReversalRefusal {
  if (amount > lot.amount - lot.reversed) return 'reversal_exceeds_credit';
  const fromLot = Math.min(amount, lot.remaining);
  const fromExpired = Math.min(amount - fromLot, lot.expired);
  const rest = amount - fromLot - fromExpired;
  const fromBalance = rest === 0 ? [] : planRest(rest);
  if (fromBalance === null) return 'insufficient_points';
  return { fromLot, fromExpired, fromBalance };
}

/** Applies a reversal as its event recorded it. */
export function applyReversal(lots: readonly Lot[], transactionId: string, plan: ReversalPlan): Lot[] {
  const total = plan.fromLot + plan.fromExpired + plan.fromBalance.reduce((sum, s) => sum + s.amount, 0);
  const reversed = withLot(lots, transactionId, (lot) => {
    if (plan.fromLot > lot.remaining || plan.fromExpired > lot.expired) throw new Error(`lot ${transactionId} cannot give what the reversal took`);
    const remaining = lot.remaining - plan.fromLot;
    return {
      ...lot,
      remaining,
      expired: lot.expired - plan.fromExpired,
      reversed: lot.reversed + total,
      reversedFromLot: lot.reversedFromLot + plan.fromLot + plan.fromExpired,
      status: remaining === 0 && lot.status !== 'expired' ? 'spent' : lot.status,
    };
  });
  return takeShares(reversed, plan.fromBalance);
}

/**
 * The work due on the lots at `now`: releases (pending lots whose `availableAt` has come),
 * expiring notices (`noticeDays` before expiry, once per lot with points left) and expiries, in
 * due order (a release before an expiry of the same instant, so nothing spendable is skipped).
 * The rule as a pass over the lots: a customer's state answers it from its sorted orders instead
 * (`LotLedger.dueWork`), and a property test holds the two equal.
 */
export function dueWork(lots: readonly Lot[], now: Date, noticeDays: number): DueWork[] {
  const at = now.toISOString();
  // A notice is due once the expiry is within `noticeDays` of now: its expiry is compared with that
  // horizon as ISO text, as instants are here, so no date is made per lot (every decision lists a
  // customer's due work, and a date made for each of its expiring lots was most of an earn's
  // decision: 2 ms with 1,000 such lots).
  const horizon = noticeHorizon(now, noticeDays);
  const work: DueWork[] = [];
  for (const lot of lots) {
    if (lot.status === 'pending' && lot.availableAt !== null && lot.availableAt <= at) {
      work.push({ kind: 'release', transactionId: lot.transactionId, at: lot.availableAt });
    }
    if (lot.remaining === 0 || lot.expiresAt === null) continue;
    if (lot.expiresAt <= at) {
      work.push({ kind: 'expire', transactionId: lot.transactionId, at: lot.expiresAt });
      continue;
    }
    if (!lot.noticed && lot.expiresAt <= horizon) work.push({ kind: 'notice', transactionId: lot.transactionId, at: noticeDue(lot.expiresAt, noticeDays) });
  }
  return work.sort(dueOrder);
}

/** The latest expiry (ISO) whose `points.expiring` notice is due at `now`. */
export function noticeHorizon(now: Date, noticeDays: number): string {
  return new Date(now.getTime() + noticeDays * DAY_MS).toISOString();
}

const RANK = { release: 0, notice: 1, expire: 2 } as const;

/** Due order: by instant, and at one instant a release before a notice before an expiry (stable beyond that). */
export function dueOrder(a: DueWork, b: DueWork): number {
  return a.at !== b.at ? (a.at < b.at ? -1 : 1) : RANK[a.kind] - RANK[b.kind];
}

/** The earliest expiry among lots with points left (pending included), amounts of that instant summed. */
export function nextExpiring(lots: readonly Lot[]): { amount: number; expiresAt: string } | null {
  let next: { amount: number; expiresAt: string } | null = null;
  for (const lot of lots) {
    if (lot.remaining === 0 || lot.expiresAt === null) continue;
    if (!next || lot.expiresAt < next.expiresAt) next = { amount: lot.remaining, expiresAt: lot.expiresAt };
    else if (lot.expiresAt === next.expiresAt) next = { amount: next.amount + lot.remaining, expiresAt: next.expiresAt };
  }
  return next;
}

function withLot(lots: readonly Lot[], transactionId: string, change: (lot: Lot) => Lot): Lot[] {
  if (!lots.some((l) => l.transactionId === transactionId)) throw new Error(`no lot ${transactionId}`);
  return lots.map((lot) => (lot.transactionId === transactionId ? change(lot) : lot));
}

function withShares(lots: readonly Lot[], shares: readonly Share[], change: (lot: Lot, amount: number) => Lot): Lot[] {
  let next = [...lots];
  for (const share of shares) next = withLot(next, share.transaction_id, (lot) => change(lot, share.amount));
  return next;
}

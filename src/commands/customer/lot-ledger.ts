import { List, Map as ImmutableMap } from 'immutable';
import {
  applyReversal,
  consumptionOrder,
  creditLot,
  type DueWork,
  dueOrder,
  expireLot,
  isSpendable,
  type Lot,
  type NewLot,
  noticeDue,
  noticeHorizon,
  noticeLot,
  oldestFirst,
  releaseLot,
  returnShares,
  reversalOf,
  type ReversalPlan,
  type ReversalRefusal,
  type Share,
  sharesFrom,
  takeShares,
} from '../../events/lots.js';
import { fnv1a } from '../../string-hash.js';
import { type LotChange, LotOrder, type LotOrderKind } from './lot-order.js';
import { type CreditSeries, NO_CREDITS, withCredit } from './rolling-tiers.js';

/** The orders of the lots with due work ahead (see `LotLedger`). */
interface DueOrders {
  releases: LotOrder;
  expiries: LotOrder;
  notices: LotOrder;
}

/** Spendable lots in consumption order; due work by its instant, then oldest first (as consumption order breaks ties). */
const SPENDABLE: LotOrderKind = { holds: isSpendable, compare: consumptionOrder };
const RELEASES: LotOrderKind = {
  holds: (lot) => lot.status === 'pending' && lot.availableAt !== null,
  compare: (a, b) => (a.availableAt !== b.availableAt ? (a.availableAt! < b.availableAt! ? -1 : 1) : oldestFirst(a, b)),
};
// With an expiry each, consumption order is by expiry, then oldest first.
const EXPIRIES: LotOrderKind = { holds: (lot) => lot.remaining > 0 && lot.expiresAt !== null, compare: consumptionOrder };
const NOTICES: LotOrderKind = { holds: (lot) => lot.remaining > 0 && lot.expiresAt !== null && !lot.noticed, compare: consumptionOrder };

/**
 * A customer's lots (CONTRACT.md §13) as the decider folds them: every lot ever made, in the order
 * made, kept in persistent structures so that a new state shares all but what an event changed. A
 * credit costs O(log n) and leaves the state before it intact, whatever the number of lots: a
 * customer with 100,000 credits earns as fast as a new one (an array copied per event made that
 * O(n), and a long history O(n²)).
 *
 * The rules stay in src/events/lots.ts: each operation takes the few lots an event names, applies
 * the pure function to them, and puts the changed lots back. A lot keeps its position (the order
 * made) for good: `lots` holds them by position, `positions` finds one by id, and sorted orders of
 * them (`LotOrder`) keep a decision's work to the few lots at their fronts, O(log n) each:
 * - `releases`, pending lots by when they become available; `expiries`, lots with points left and
 *   an expiry, by it; `notices`, those of them not noticed yet: a customer's due work, and when the
 *   next falls due, are at their fronts (lots.ts `dueWork` defines the work; a property test
 *   compares);
 * - `spendable`, in consumption order: a debit takes from its front (built on the first debit).
 * A spent, expired or fully reversed lot leaves them (a cancelled redemption's return brings it
 * back), and stays in `lots` for reversals, rolling tiers and audits.
 *
 * Memory is per lot, for as long as a customer's state is held (the state cache keeps thousands):
 * a List slot besides the lot itself, a tree slot in each order that holds it, and an id's entry in
 * a persistent Map (about 80 bytes) once the ledger was searched by id (`#positions`), where an
 * OrderedMap of lots and two OrderedSets of ids took about 340 (docs/performance.md, "Memory under
 * a steady load"). A customer that only earns, revived from its snapshot, holds about 273 bytes a
 * lot, its strings included (416 with the Map; measured with --expose-gc, session of 2026-11-29);
 * one whose lots expire about 345 (317 before the due orders). A customer in rolling tier mode
 * holds three numbers a lot more (`credits()`: times, amounts and their running sums, 24–32 bytes).
 */
export class LotLedger {
  /**
   * Positions by `idHash` of the lot's id: one, or several where ids collide (see `positionIn`).
   * Built on the first lookup by id (`index`) and carried to every ledger made from this one
   * after it: a customer that only earns never needs one, and it was a fifth of a lot's memory
   * (about 80 bytes) and most of the time to revive a snapshot. A memo, so an ES private field:
   * two ledgers of the same lots are equal (deep equality) whether or not one was searched.
   */
  #positions: Positions | undefined;

  /**
   * The lots as rolling qualification counts them (`credits()`): built on first use, and carried
   * to every ledger made from this one (a credit appends to it, a reversal drops it), so a customer
   * in rolling mode parses each lot's time once, and one in lifetime mode never. A memo too.
   */
  #credits: CreditSeries | undefined;

  /**
   * The spendable lots in consumption order: built on the first debit planned on this ledger or
   * the ones it was made from, and carried to every ledger made from it after (a customer that
   * only earns never needs it). A memo too.
   */
  #spendable: LotOrder | undefined;

  /**
   * The orders of the lots with due work ahead. Derived from the lots, so an ES private field too:
   * two ledgers of the same lots are equal whatever shape their trees took.
   */
  readonly #due: DueOrders;

  private constructor(
    private readonly lots: List<Lot>,
    positions: Positions | undefined,
    due: DueOrders,
    credits: CreditSeries | undefined,
    spendable: LotOrder | undefined,
  ) {
    this.#positions = positions;
    this.#credits = credits;
    this.#spendable = spendable;
    this.#due = due;
  }

  static readonly EMPTY = new LotLedger(List(), undefined, { releases: LotOrder.empty(RELEASES), expiries: LotOrder.empty(EXPIRIES), notices: LotOrder.empty(NOTICES) }, undefined, undefined);

  /** From lots in the order made (each id once). */
  static of(lots: Iterable<Lot>): LotLedger {
    return LotLedger.EMPTY.put([...lots], true);
  }

  /** From a snapshot's JSON (`toJSON`). */
  static fromSnapshot(stored: readonly StoredLot[]): LotLedger {
    return LotLedger.of(stored.map(storedLot));
  }

  get size(): number {
    return this.lots.size;
  }

  get(transactionId: string): Lot | undefined {
    const position = positionIn(this.lots, this.index(), transactionId);
    return position === undefined ? undefined : this.lots.get(position);
  }

  /** Every lot, in the order made. */
  values(): Lot[] {
    return this.lots.toArray();
  }

  /** Every lot's time and points net of reversals, in the order made. */
  credits(): CreditSeries {
    if (this.#credits) return this.#credits;
    let credits = NO_CREDITS;
    this.lots.forEach((lot) => {
      credits = withCredit(credits, Date.parse(lot.createdAt), lot.amount - lot.reversed);
    });
    return (this.#credits = credits);
  }

  credit(lot: NewLot): LotLedger {
    return this.put(creditLot([], lot), true);
  }

  takeShares(shares: readonly Share[]): LotLedger {
    return shares.length === 0 ? this : this.put(takeShares(this.named(shares.map((s) => s.transaction_id)), shares));
  }

  returnShares(shares: readonly Share[]): LotLedger {
    return shares.length === 0 ? this : this.put(returnShares(this.named(shares.map((s) => s.transaction_id)), shares));
  }

  release(transactionId: string): LotLedger {
    return this.put(releaseLot(this.named([transactionId]), transactionId));
  }

  notice(transactionId: string): LotLedger {
    return this.put(noticeLot(this.named([transactionId]), transactionId));
  }

  expire(transactionId: string): LotLedger {
    return this.put(expireLot(this.named([transactionId]), transactionId).lots);
  }

  reverse(transactionId: string, plan: ReversalPlan): LotLedger {
    const ids = [transactionId, ...plan.fromBalance.map((s) => s.transaction_id)];
    return this.put(applyReversal(this.named(ids), transactionId, plan));
  }

  /** The shares a debit of `amount` takes, in consumption order, sparing lot `except`; null when the balance is short (lots.ts `planDebit`). */
  planDebit(amount: number, except?: string): Share[] | null {
    if (amount === 0) return [];
    const spendable = (this.#spendable ??= LotOrder.of(SPENDABLE, this.lots));
    return sharesFrom(spendable.lots(), amount, except);
  }

  planReversal(transactionId: string, amount: number): ReversalPlan | ReversalRefusal {
    const lot = this.get(transactionId);
    if (!lot) throw new Error(`no lot ${transactionId}`);
    return reversalOf(lot, amount, (rest) => this.planDebit(rest, transactionId));
  }

  /** The work due at `now`, in due order (what lots.ts `dueWork` lists: a property test compares). */
  dueWork(now: Date, noticeDays: number): DueWork[] {
    const { releases, expiries, notices } = this.#due;
    if (releases.size + expiries.size + notices.size === 0) return [];
    const at = now.toISOString();
    const horizon = noticeHorizon(now, noticeDays);
    const work: DueWork[] = [];
    for (const lot of releases.lots((l) => l.availableAt! <= at)) {
      work.push({ kind: 'release', transactionId: lot.transactionId, at: lot.availableAt! });
    }
    for (const lot of expiries.lots((l) => l.expiresAt! <= at)) {
      work.push({ kind: 'expire', transactionId: lot.transactionId, at: lot.expiresAt! });
    }
    for (const lot of notices.lots((l) => l.expiresAt! <= horizon)) {
      // Expiring now, it expires instead (listed above).
      if (lot.expiresAt! > at) work.push({ kind: 'notice', transactionId: lot.transactionId, at: noticeDue(lot.expiresAt!, noticeDays) });
    }
    return work.sort(dueOrder);
  }

  /** When the lots' next due work falls due (ISO): the earliest release, expiry or expiring notice; null when none will. */
  nextDue(noticeDays: number): string | null {
    const { releases, expiries, notices } = this.#due;
    const unnoticed = notices.first()?.expiresAt;
    const candidates = [releases.first()?.availableAt ?? null, expiries.first()?.expiresAt ?? null, unnoticed ? noticeDue(unnoticed, noticeDays) : null];
    return candidates.reduce<string | null>((next, at) => (at !== null && (next === null || at < next) ? at : next), null);
  }

  /** A snapshot holds the lots in the order made, each as a `StoredLot`. */
  toJSON(): StoredLot[] {
    return this.lots.toArray().map(toStored);
  }

  /** The lots named, in the order given (each once); throws for an id it does not hold. */
  private named(ids: readonly string[]): Lot[] {
    return [...new Set(ids)].map((id) => {
      const lot = this.get(id);
      if (!lot) throw new Error(`no lot ${id}`);
      return lot;
    });
  }

  /** The positions by id hash, built now if no lookup by id was made on this ledger or the ones it was made from. */
  private index(): Positions {
    if (this.#positions) return this.#positions;
    let positions: Positions = ImmutableMap<number, number | readonly number[]>().asMutable();
    this.lots.forEach((lot, position) => {
      positions = addPosition(positions, lot.transactionId, position);
    });
    return (this.#positions = positions.asImmutable());
  }

  /**
   * Puts changed lots back, or new ones (`fresh`: credits, whose ids are new) at the next
   * positions, moving each in or out of the orders.
   */
  private put(changed: readonly Lot[], fresh = false): LotLedger {
    if (changed.length === 0) return this;
    let lots = this.lots;
    let positions = fresh ? this.#positions : this.index();
    let credits = this.#credits;
    const batch = changed.length > 1;
    if (batch) {
      lots = lots.asMutable();
      positions = positions?.asMutable();
    }
    const changes: LotChange[] = [];
    for (const lot of changed) {
      let position = fresh ? undefined : positionAmong(lots, positions!.get(idHash(lot.transactionId)), lot.transactionId);
      if (position === undefined) {
        position = lots.size;
        lots = lots.push(lot);
        if (positions) positions = addPosition(positions, lot.transactionId, position);
        if (credits) credits = withCredit(credits, Date.parse(lot.createdAt), lot.amount - lot.reversed);
        changes.push({ before: undefined, after: lot });
      } else {
        const before = lots.get(position)!;
        if (credits && (before.amount - before.reversed !== lot.amount - lot.reversed || before.createdAt !== lot.createdAt)) credits = undefined;
        lots = lots.set(position, lot);
        changes.push({ before, after: lot });
      }
    }
    const { releases, expiries, notices } = this.#due;
    const due = { releases: releases.with(changes), expiries: expiries.with(changes), notices: notices.with(changes) };
    return new LotLedger(batch ? lots.asImmutable() : lots, batch ? positions?.asImmutable() : positions, due, credits, this.#spendable?.with(changes));
  }
}


type Positions = ImmutableMap<number, number | readonly number[]>;

/** `positions` with `id` at `position` too (in place when `positions` is mutable). */
function addPosition(positions: Positions, id: string, position: number): Positions {
  const hash = idHash(id);
  const taken = positions.get(hash);
  return positions.set(hash, taken === undefined ? position : [...(typeof taken === 'number' ? [taken] : taken), position]);
}

/**
 * FNV-1a of a lot's id, the key of `positions`. immutable.js hashes a number as itself, but a
 * string key longer than 16 characters (a `txn_…` id is 24) through a cache of its own that holds
 * 255 strings and is emptied when full: rebuilding the ledgers of customers with a few hundred lots
 * each (more lots than the state cache holds, so states are reloaded) spent 12% of a loaded
 * server's time in it.
 */
export function idHash(id: string): number {
  return fnv1a(id) | 0;
}

/** Where the lot `id` is in `lots`, through `positions`. */
function positionIn(lots: List<Lot>, positions: Positions, id: string): number | undefined {
  return positionAmong(lots, positions.get(idHash(id)), id);
}

/** Which of the positions under `id`'s hash (`found`) holds the lot `id`, checked against the lots' own ids. */
function positionAmong(lots: List<Lot>, found: number | readonly number[] | undefined, id: string): number | undefined {
  if (found === undefined) return undefined;
  if (typeof found === 'number') return lots.get(found)?.transactionId === id ? found : undefined;
  return found.find((p) => lots.get(p)?.transactionId === id);
}

/**
 * A lot as a snapshot holds it: its fields in a fixed order, without their names. A customer's
 * snapshot is mostly lots; as objects they took 274 characters each, as arrays about 100, so a
 * cold load parses a third as much (snapshots are read on every load of a customer memory could
 * not keep, and written as such a customer leaves it: src/commands/state-cache.ts).
 */
export type StoredLot = [
  transactionId: string,
  amount: number,
  remaining: number,
  spent: number,
  expired: number,
  reversed: number,
  reversedFromLot: number,
  status: Lot['status'],
  availableAt: string | null,
  expiresAt: string | null,
  createdAt: string,
  noticed: 0 | 1,
  expiries: number,
];

function toStored(lot: Lot): StoredLot {
  return [
    lot.transactionId,
    lot.amount,
    lot.remaining,
    lot.spent,
    lot.expired,
    lot.reversed,
    lot.reversedFromLot,
    lot.status,
    lot.availableAt,
    lot.expiresAt,
    lot.createdAt,
    lot.noticed ? 1 : 0,
    lot.expiries,
  ];
}

/** One object literal of every field, in the order `creditLot` makes them: every lot of a state has one shape (see `creditLot`). */
function storedLot([transactionId, amount, remaining, spent, expired, reversed, reversedFromLot, status, availableAt, expiresAt, createdAt, noticed, expiries]: StoredLot): Lot {
  return { transactionId, amount, remaining, spent, expired, reversed, reversedFromLot, status, availableAt, expiresAt, createdAt, noticed: noticed === 1, expiries };
}

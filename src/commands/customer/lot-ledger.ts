import { List, Map as ImmutableMap } from 'immutable';
import {
  applyReversal,
  creditLot,
  type DueWork,
  dueWork,
  expireLot,
  type Lot,
  type NewLot,
  noticeLot,
  planDebit,
  planReversal,
  releaseLot,
  returnShares,
  type ReversalPlan,
  type ReversalRefusal,
  type Share,
  takeShares,
} from '../../events/lots.js';
import { fnv1a } from '../../string-hash.js';
import { PositionSet } from './position-set.js';
import { type CreditSeries, NO_CREDITS, withCredit } from './rolling-tiers.js';

/**
 * A customer's lots (CONTRACT.md §13) as the decider folds them: every lot ever made, in the order
 * made, kept in persistent structures so that a new state shares all but what an event changed. A
 * credit costs O(log n) and leaves the state before it intact, whatever the number of lots: a
 * customer with 100,000 credits earns as fast as a new one (an array copied per event made that
 * O(n), and a long history O(n²)).
 *
 * The rules stay in src/events/lots.ts: each operation takes the few lots an event names (or the open ones a
 * plan needs), applies the pure function to them, and puts the changed lots back. A lot keeps its
 * position (the order made) for good: `lots` holds them by position, `positions` finds one by id,
 * and two sets of positions keep the per-command work to the lots that can still change:
 * - `open`: lots with points left or pending — what a debit plans from;
 * - `timed`: open lots that are pending or have an expiry — the only ones with due work.
 * A spent, expired or fully reversed lot leaves both (a cancelled redemption's return, or nothing,
 * brings it back), and stays in `lots` for reversals, rolling tiers and audits.
 *
 * Memory is per lot, for as long as a customer's state is held (the state cache keeps thousands):
 * a List slot and two bits besides the lot itself, and an id's entry in a persistent Map (about
 * 80 bytes) once the ledger was searched by id (`#positions`), where an OrderedMap of lots and two
 * OrderedSets of ids took about 340 (docs/performance.md, "Memory under a steady load"). A customer
 * that only earns, revived from its snapshot, holds about 273 bytes a lot, its strings included
 * (416 with the Map; measured with --expose-gc, session of 2026-11-29). A customer in rolling tier
 * mode holds two numbers a lot more (`credits()`: 16–24 bytes).
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

  private constructor(
    private readonly lots: List<Lot>,
    positions: Positions | undefined,
    private readonly open: PositionSet,
    private readonly timed: PositionSet,
    credits: CreditSeries | undefined,
  ) {
    this.#positions = positions;
    this.#credits = credits;
  }

  static readonly EMPTY = new LotLedger(List(), undefined, PositionSet.EMPTY, PositionSet.EMPTY, undefined);

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

  /** Lots with points left or pending (in the order made; callers sort). */
  openLots(): Lot[] {
    return this.lotsOf(this.open);
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

  /** The shares a debit of `amount` takes, in consumption order; null when the balance is short. */
  planDebit(amount: number, except?: string): Share[] | null {
    return planDebit(this.openLots(), amount, except);
  }

  planReversal(transactionId: string, amount: number): ReversalPlan | ReversalRefusal {
    const position = positionIn(this.lots, this.index(), transactionId);
    const lot = position === undefined ? undefined : this.lots.get(position);
    const lots = lot && !this.open.has(position!) ? [lot, ...this.openLots()] : this.openLots();
    return planReversal(lots, transactionId, amount);
  }

  /** The work due at `now`, in due order (see lots.ts `dueWork`). */
  dueWork(now: Date, noticeDays: number): DueWork[] {
    return this.timed.size === 0 ? [] : dueWork(this.lotsOf(this.timed), now, noticeDays);
  }

  /** Open lots that have due work ahead: pending, or with points and an expiry. */
  timedLots(): Lot[] {
    return this.lotsOf(this.timed);
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

  private lotsOf(set: PositionSet): Lot[] {
    return set.positions().map((position) => this.lots.get(position)!);
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
   * positions, moving each in or out of the indexes.
   */
  private put(changed: readonly Lot[], fresh = false): LotLedger {
    if (changed.length === 0) return this;
    let { lots, open, timed } = this;
    let positions = fresh ? this.#positions : this.index();
    let credits = this.#credits;
    const batch = changed.length > 1;
    if (batch) {
      lots = lots.asMutable();
      positions = positions?.asMutable();
      open = open.asMutable();
      timed = timed.asMutable();
    }
    for (const lot of changed) {
      let position = fresh ? undefined : positionAmong(lots, positions!.get(idHash(lot.transactionId)), lot.transactionId);
      if (position === undefined) {
        position = lots.size;
        lots = lots.push(lot);
        if (positions) positions = addPosition(positions, lot.transactionId, position);
        if (credits) credits = withCredit(credits, Date.parse(lot.createdAt), lot.amount - lot.reversed);
      } else {
        const before = lots.get(position)!;
        if (credits && (before.amount - before.reversed !== lot.amount - lot.reversed || before.createdAt !== lot.createdAt)) credits = undefined;
        lots = lots.set(position, lot);
      }
      const isOpen = lot.remaining > 0 || lot.status === 'pending';
      open = open.with(position, isOpen);
      timed = timed.with(position, isOpen && (lot.status === 'pending' || lot.expiresAt !== null));
    }
    return batch
      ? new LotLedger(lots.asImmutable(), positions?.asImmutable(), open.asImmutable(), timed.asImmutable(), credits)
      : new LotLedger(lots, positions, open, timed, credits);
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

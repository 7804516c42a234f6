import { type CompiledQuery, sql, type Transaction } from 'kysely';
import { readAheadOfWaitingWrites } from '../../db/deferred-writes.js';
import {
  applyReversal,
  creditLot,
  expireLot,
  type Lot,
  type NewLot,
  nextExpiring,
  noticeLot,
  planDebit,
  releaseLot,
  returnShares,
  type ReversalPlan,
  type Share,
  takeShares,
} from '../../events/lots.js';
import type { Database, LotRow } from '../../db/schema.js';
import type { LotShare } from '../../events/customer-events.js';
import { streams } from '../../events/streams.js';
import type { ProjectedEvent } from '../projector.js';
import { rowSetInsert, rowSetUpdate } from '../insert-rows.js';

/**
 * A batch's view of the lots its events touch (CONTRACT.md §13), changed with the decider's own
 * pure functions (src/events/lots.ts), so the `lots` rows are what the customer's state
 * holds. A batch loads only what it needs in one query: the lots its events name (debits' and
 * returns' shares, reversed credits, released / noticed / expired lots) and, for debits written
 * before lots existed (no shares recorded), the customer's open lots to plan them from. Credits
 * need nothing loaded: a busy customer's thousands of lots are never read back to add one.
 *
 * Nor does an expiry, mostly (`expireUnread`): the lots a `PointsExpired` names, when no other
 * event of the batch names them and none was pending, are expired by one statement that computes
 * each row from itself, checked against the points the event says each lost. A mass expiry's
 * lots are then neither read nor rebuilt in JavaScript, which was most of what a lot cost the
 * projection (docs/performance.md).
 */
export class LotBook {
  /** Per customer, the lots loaded or made in this batch, by id. */
  private readonly lots = new Map<string, Map<string, Lot>>();
  /** Per changed lot (`customer lot`): its customer, what it was before the batch (null for a lot made in it) and what it is now. */
  private readonly changed = new Map<string, ChangedLot>();
  private readonly businessOf = new Map<string, string>();
  /** The lots (`customer lot`) whose expiry in this batch is written without reading them (see `load`). */
  private readonly unread: ReadonlySet<string>;
  /** The expiries of unread lots, in the batch's order. */
  private readonly expiredUnread: Array<{ customerId: string; transactionId: string; amount: number }> = [];

  private constructor(unread: ReadonlySet<string> = new Set()) {
    this.unread = unread;
  }

  /**
   * The book of a batch, its named lots read. With `expireUnread` (the live projection; a rebuild
   * reads ahead, which needs every row it changes in the book), the lots of an expiry that no
   * other event of the batch names, none of them pending, are not read: see `expireUnread`.
   */
  static async load(trx: Transaction<Database>, events: readonly ProjectedEvent[], options: { expireUnread?: boolean } = {}): Promise<LotBook> {
    const { named, planned, unread } = lotsNamedIn(events, options.expireUnread ?? false);
    const book = new LotBook(unread);
    if (named.size > 0 || planned.size > 0) book.fill(await lotRows(trx, [...named.values()], planned));
    return book;
  }

  /**
   * `load` of the next page of a rebuild, its read sent now, ahead of the writes `before` (the
   * book of the page just applied) left waiting (`readAheadOfWaitingWrites`): the rows it reads are
   * as they were before that page, and the lots `before` changed or made are put over them, so the
   * book holds what `load` would read once those writes are done. (A customer's lot that page
   * closed stays in the book, closed: a debit plans only from lots with points left.)
   */
  static async readAhead(trx: Transaction<Database>, events: readonly ProjectedEvent[], before: LotBook): Promise<LotBook> {
    const book = new LotBook();
    const { named, planned } = lotsNamedIn(events, false);
    if (named.size === 0 && planned.size === 0) return book;
    book.fill(await lotRows(trx, [...named.values()], planned, readAheadOfWaitingWrites));
    for (const [key, { customerId, now }] of before.changed) {
      if (!named.has(key) && !planned.has(customerId)) continue;
      book.customerLots(customerId).set(now.transactionId, now);
      book.businessOf.set(customerId, before.businessOf.get(customerId)!);
    }
    return book;
  }

  /** The lots read, in the order of their creation (`seq`): a lot both named and open comes twice, the same row, kept once. */
  private fill(rows: readonly LotRow[]): void {
    for (const row of rows) {
      this.customerLots(row.customer_id).set(row.transaction_id, lotOf(row));
      this.businessOf.set(row.customer_id, row.business_id);
    }
  }

  credit(customerId: string, businessId: string, lot: NewLot): void {
    this.businessOf.set(customerId, businessId);
    this.change(customerId, [], (lots) => creditLot(lots, lot));
  }

  /**
   * A debit takes its recorded shares; one written before lots existed is planned as the decider
   * plans it. The shares taken (kept on the debit's ledger line: a cancellation of a redemption
   * that recorded none gives back what it was planned to take).
   */
  debit(customerId: string, shares: readonly LotShare[] | undefined, amount: number): LotShare[] {
    let taken: LotShare[] = [];
    this.change(customerId, shares ? shares.map((s) => s.transaction_id) : 'all', (lots) => {
      const planned = shares ?? planDebit(lots, amount);
      if (!planned) throw new Error(`customer ${customerId}: a debit of ${amount} is more than its lots hold`);
      taken = [...planned];
      return takeShares(lots, planned);
    });
    return taken;
  }

  /** A cancelled redemption's points go back to the lots it took from (recorded, or as its redemption was planned). */
  giveBack(customerId: string, shares: readonly LotShare[]): void {
    this.change(customerId, shares.map((s) => s.transaction_id), (lots) => returnShares(lots, shares));
  }

  release(customerId: string, transactionId: string): void {
    this.change(customerId, [transactionId], (lots) => releaseLot(lots, transactionId));
  }

  notice(customerId: string, transactionId: string): void {
    this.change(customerId, [transactionId], (lots) => noticeLot(lots, transactionId));
  }

  expire(customerId: string, shares: readonly LotShare[]): void {
    for (const { transaction_id, amount } of shares) {
      if (this.unread.has(lotKey(customerId, transaction_id))) this.expiredUnread.push({ customerId, transactionId: transaction_id, amount });
      else this.change(customerId, [transaction_id], (lots) => expireLot(lots, transaction_id).lots);
    }
  }

  /**
   * Writes the expiries of unread lots (run before `writes`): each row as `expireLot` would leave
   * it, computed from the row itself, where it holds what the expiry says it lost and is
   * available, as the log says it is. A row that does not (a read model that disagrees with the
   * log) is read and expired through the book instead, exactly as before this shortcut.
   */
  async expireUnread(trx: Transaction<Database>): Promise<void> {
    if (this.expiredUnread.length === 0) return;
    const expiries = this.expiredUnread;
    // Each row found by its key (`offset 0` keeps the lateral a probe per lot), then updated by
    // its tuple id: joined to the arrays with the checks in the join, a table not analyzed since a
    // bulk load was planned as a hash join over a scan of every lot (35 µs a lot instead of 12).
    const { rows } = await sql<{ customer_id: string; transaction_id: string }>`
      with matched as (
        select l.row from unnest(${expiries.map((e) => e.customerId)}::text[], ${expiries.map((e) => e.transactionId)}::text[], ${expiries.map((e) => e.amount)}::int8[])
               as x(customer_id, transaction_id, amount)
          cross join lateral (select ctid as row, remaining, status from lots where customer_id = x.customer_id and transaction_id = x.transaction_id offset 0) l
         where l.remaining = x.amount and l.status = 'available')
      update lots set remaining = 0, expired = expired + remaining, status = 'expired', expiries = expiries + 1
       where ctid = any(array(select row from matched))
      returning customer_id, transaction_id`.execute(trx);
    if (rows.length === expiries.length) return;
    const written = new Set(rows.map((r) => lotKey(r.customer_id, r.transaction_id)));
    const left = expiries.filter((e) => !written.has(lotKey(e.customerId, e.transactionId)));
    this.fill(await lotRows(trx, left.map((e) => ({ customer: e.customerId, lot: e.transactionId })), new Set()));
    for (const { customerId, transactionId } of left) this.change(customerId, [transactionId], (lots) => expireLot(lots, transactionId).lots);
  }

  reverse(customerId: string, transactionId: string, plan: ReversalPlan): void {
    this.change(customerId, [transactionId, ...plan.fromBalance.map((s) => s.transaction_id)], (lots) => applyReversal(lots, transactionId, plan));
  }

  /**
   * The batch's writes to `lots`, built (see `rowSetInsert`'s `prepare`): the changed lots that
   * existed updated, the new ones inserted in the order they were made.
   */
  writes(trx: Transaction<Database>): Array<() => Promise<void>> {
    const existing: Record<string, unknown>[] = [];
    const made: Record<string, unknown>[] = [];
    for (const { customerId, was, now } of this.changed.values()) {
      (was ? existing : made).push(rowOf(now, customerId, this.businessOf.get(customerId)!));
    }
    return [updateLots.prepare(trx, existing), insertLots.prepare(trx, made)];
  }

  /** Per customer, how the batch moved its pending points. */
  pendingMoves(): Map<string, number> {
    const moves = new Map<string, number>();
    for (const { customerId, was, now } of this.changed.values()) {
      const move = pendingOf(now) - (was ? pendingOf(was) : 0);
      if (move !== 0) moves.set(customerId, (moves.get(customerId) ?? 0) + move);
    }
    return moves;
  }

  /**
   * Per customer one of whose lots with an expiry changed: those lots (`changed`), and the earliest
   * expiry among them that has points left after the batch, with the points of that instant (null:
   * none). The customer's next expiring points are the earlier of that and of its other lots, which
   * the batch left as they were (`NextExpiring`).
   */
  expiringChanges(): Map<string, NextExpiring> {
    const lots = new Map<string, { changed: string[]; now: Lot[] }>();
    const of = (customerId: string) => {
      let entry = lots.get(customerId);
      if (!entry) lots.set(customerId, (entry = { changed: [], now: [] }));
      return entry;
    };
    for (const { customerId, was, now } of this.changed.values()) {
      if (!was?.expiresAt && !now.expiresAt) continue;
      const entry = of(customerId);
      entry.changed.push(now.transactionId);
      entry.now.push(now);
    }
    for (const { customerId, transactionId } of this.expiredUnread) of(customerId).changed.push(transactionId); // closed now
    const changes = new Map<string, NextExpiring>();
    for (const [customerId, { changed, now }] of lots) {
      const next = nextExpiring(now);
      changes.set(customerId, { changed, at: next?.expiresAt ?? null, amount: next?.amount ?? 0 });
    }
    return changes;
  }

  private customerLots(customerId: string): Map<string, Lot> {
    let lots = this.lots.get(customerId);
    if (!lots) this.lots.set(customerId, (lots = new Map()));
    return lots;
  }

  /**
   * Runs a pure change on the customer's lots it names (`all`: every known one, for a debit to plan
   * from) and keeps the lots it replaced or added. Only the named ones: a batch of many credits to
   * one customer would otherwise copy its lots once per event.
   */
  private change(customerId: string, named: readonly string[] | 'all', fn: (lots: Lot[]) => Lot[]): void {
    const known = this.customerLots(customerId);
    const current =
      named === 'all' ? [...known.values()] : named.length === 0 ? [] : [...new Set(named)].flatMap((id) => known.get(id) ?? []);
    for (const lot of fn(current)) {
      const was = known.get(lot.transactionId);
      if (was === lot) continue;
      const key = lotKey(customerId, lot.transactionId);
      const entry = this.changed.get(key);
      if (entry) entry.now = lot;
      else this.changed.set(key, { customerId, was: was ?? null, now: lot });
      known.set(lot.transactionId, lot);
    }
  }
}

/** What a batch knows of a customer's next expiring points: see `LotBook.expiringChanges`. */
export interface NextExpiring {
  /** The lots with an expiry the batch changed (their rows are not to be read for it). */
  changed: string[];
  /** The earliest expiry (ISO) among them with points left, and the points of that instant; null: none. */
  at: string | null;
  amount: number;
}

interface ChangedLot {
  customerId: string;
  was: Lot | null;
  now: Lot;
}

/**
 * What a batch of `events` loads: the lots named, as (customer, lot) pairs (by `customer lot`),
 * and the customers whose open lots a debit with no recorded shares plans from. With
 * `expireUnread`, the lots of each expiry of none pending whose lots no other event of the batch
 * names are `unread` instead of named.
 */
function lotsNamedIn(
  events: readonly ProjectedEvent[],
  expireUnread: boolean,
): { named: Map<string, { customer: string; lot: string }>; planned: Set<string>; unread: Set<string> } {
  const named = new Map<string, { customer: string; lot: string }>();
  const planned = new Set<string>();
  const unread = new Set<string>();
  const times = new Map<string, number>();
  for (const event of events) {
    const customerId = streams.customerIdOf(event.streamId);
    const ids = lotsNamedBy(event);
    if (ids === 'open lots') planned.add(customerId);
    else
      for (const id of ids) {
        const key = lotKey(customerId, id);
        named.set(key, { customer: customerId, lot: id });
        if (expireUnread) times.set(key, (times.get(key) ?? 0) + 1);
      }
  }
  if (!expireUnread) return { named, planned, unread };
  for (const event of events) {
    if (event.type !== 'PointsExpired' || event.data.pending !== 0) continue;
    const customerId = streams.customerIdOf(event.streamId);
    if (planned.has(customerId)) continue; // a debit planned from the customer's open lots may take from them
    const keys = event.data.lots.map((s) => lotKey(customerId, s.transaction_id));
    if (keys.some((key) => times.get(key) !== 1)) continue;
    for (const key of keys) {
      named.delete(key);
      unread.add(key);
    }
  }
  return { named, planned, unread };
}

/**
 * The lots of `pairs`, looked up by the primary key one by one (a filter of every named customer
 * and every named lot id left the planner to guess, and on a table not analyzed since a bulk load
 * it read all of `lots` for each batch: 400 ms at 100,000 lots), and the open lots of `planned`,
 * in the order of their creation.
 */
async function lotRows(
  trx: Transaction<Database>,
  pairs: ReadonlyArray<{ customer: string; lot: string }>,
  planned: ReadonlySet<string>,
  mark: (query: CompiledQuery) => CompiledQuery = (query) => query,
): Promise<LotRow[]> {
  const query = sql<LotRow>`
      select l.* from unnest(${pairs.map((p) => p.customer)}::text[], ${pairs.map((p) => p.lot)}::text[]) as k(customer_id, transaction_id)
        join lots l on l.customer_id = k.customer_id and l.transaction_id = k.transaction_id
      union all
      select * from lots where customer_id = any(${[...planned]}::text[]) and ${OPEN}
      order by seq`.compile(trx);
  return (await trx.executeQuery<LotRow>(mark(query))).rows;
}

/** The lots a debit with no recorded shares may plan from or give back to. */
const OPEN = sql`(remaining > 0 or spent > 0)`;

/** The lots an event changes, or `open lots` for a debit whose shares must be planned. */
function lotsNamedBy(event: ProjectedEvent): string[] | 'open lots' {
  switch (event.type) {
    case 'RewardRedeemed':
      if (event.data.points_cost === 0) return [];
      return event.data.lots ? event.data.lots.map((s) => s.transaction_id) : 'open lots';
    case 'RedemptionCancelled':
      // One that recorded no shares gives back its redemption's (read from its ledger line): those lots, and any open.
      if (event.data.points_cost === 0) return [];
      return event.data.lots ? event.data.lots.map((s) => s.transaction_id) : 'open lots';
    case 'PointsDeducted':
      return event.data.lots ? event.data.lots.map((s) => s.transaction_id) : 'open lots';
    case 'PointsAdjusted':
      if (event.data.amount >= 0) return [];
      return event.data.lots ? event.data.lots.map((s) => s.transaction_id) : 'open lots';
    case 'PointsReleased':
    case 'PointsExpiringNotified':
      return [event.data.lot_transaction_id];
    case 'PointsExpired':
      return event.data.lots.map((s) => s.transaction_id);
    case 'PointsReversed':
      return [event.data.reversed_transaction_id, ...event.data.lots.map((s) => s.transaction_id)];
    default:
      return [];
  }
}

const pendingOf = (lot: Lot) => (lot.status === 'pending' ? lot.remaining : 0);

function lotOf(row: LotRow): Lot {
  return {
    transactionId: row.transaction_id,
    amount: Number(row.amount),
    remaining: Number(row.remaining),
    spent: Number(row.spent),
    expired: Number(row.expired),
    reversed: Number(row.reversed),
    reversedFromLot: Number(row.reversed_from_lot),
    status: row.status,
    availableAt: row.available_at?.toISOString() ?? null,
    expiresAt: row.expires_at?.toISOString() ?? null,
    createdAt: row.created_at.toISOString(),
    noticed: row.noticed,
    expiries: row.expiries,
  };
}

function rowOf(lot: Lot, customerId: string, businessId: string): Record<string, unknown> {
  return {
    business_id: businessId,
    customer_id: customerId,
    transaction_id: lot.transactionId,
    amount: lot.amount,
    remaining: lot.remaining,
    spent: lot.spent,
    expired: lot.expired,
    reversed: lot.reversed,
    reversed_from_lot: lot.reversedFromLot,
    status: lot.status,
    available_at: lot.availableAt,
    expires_at: lot.expiresAt,
    noticed: lot.noticed,
    expiries: lot.expiries,
    created_at: lot.createdAt,
  };
}

const LOT_COLUMNS = {
  business_id: 'text',
  customer_id: 'text',
  transaction_id: 'text',
  amount: 'bigint',
  remaining: 'bigint',
  spent: 'bigint',
  expired: 'bigint',
  reversed: 'bigint',
  reversed_from_lot: 'bigint',
  status: 'text',
  available_at: 'timestamptz',
  expires_at: 'timestamptz',
  noticed: 'boolean',
  expiries: 'integer',
  created_at: 'timestamptz',
};

/** New lots. */
const insertLots = rowSetInsert('lots', LOT_COLUMNS, { deferred: true });

/** Changed lots, by key: what a lot's events change (never its business, amount or creation). */
const { business_id: _business, amount: _amount, created_at: _created, ...CHANGING_COLUMNS } = LOT_COLUMNS;
const updateLots = rowSetUpdate('lots', ['customer_id', 'transaction_id'], CHANGING_COLUMNS, { deferred: true });

/** A lot's key in the book's maps: its customer and its id (`customer lot`). */
function lotKey(customerId: string, transactionId: string): string {
  return `${customerId} ${transactionId}`;
}

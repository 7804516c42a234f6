import { sql, type Transaction } from 'kysely';
import type { Database } from '../../db/schema.js';
import { rowSetInsert } from '../insert-rows.js';
import { type LedgerSource, type LedgerType, ledgerEntryFromEvent } from '../customers/ledger-entry.js';
import { defineProjector } from '../projector.js';

type Figure = 'issued' | 'redeemed' | 'expired';

/**
 * Where each ledger line counts in the day's figures, and with which sign: credits count as issued
 * on their day (an adjust is a correction of what was earned, so a negative one lowers it), debits
 * as redeemed, a cancelled redemption gives its points back on the day it is cancelled. An expiry
 * counts as expired; a reversal takes back what was issued (and the part of it that had expired
 * from expired: see `count`); a release counts nowhere, its points were issued with their credit.
 * A new ledger type breaks the build here until it is placed.
 */
const COUNTS: Record<LedgerType, { figure: Figure; sign: 1 | -1 } | null> = {
  earn: { figure: 'issued', sign: 1 },
  adjust: { figure: 'issued', sign: 1 },
  event: { figure: 'issued', sign: 1 },
  deduct: { figure: 'redeemed', sign: 1 },
  redemption: { figure: 'redeemed', sign: 1 },
  redemption_cancelled: { figure: 'redeemed', sign: -1 },
  release: null,
  expire: { figure: 'expired', sign: 1 },
  reversal: { figure: 'issued', sign: -1 },
};

const COLUMNS = { business_id: 'text', day: 'date', issued: 'bigint', redeemed: 'bigint', expired: 'bigint' };
const insertDays = rowSetInsert('daily_points', COLUMNS, {
  deferred: true,
  onConflict: sql`on conflict (business_id, day) do update set
    issued = daily_points.issued + excluded.issued,
    redeemed = daily_points.redeemed + excluded.redeemed,
    expired = daily_points.expired + excluded.expired`,
});

/**
 * `daily_points`: points issued, redeemed and expired per business and UTC day. A batch sums its
 * lines per (business, day) in memory and adds them with one upsert, so the statement count is one
 * per batch whatever its size.
 */
export const dailyPointsProjector = defineProjector<Batch>({
  name: 'daily-points',
  tables: ['daily_points'],
  begin: (trx) => ({ trx, days: new Map() }),
  on: {
    PointsEarned: count,
    PointsDeducted: count,
    PointsAdjusted: count,
    EventRecorded: count,
    RewardRedeemed: count,
    RedemptionCancelled: count,
    PointsReleased: count,
    PointsExpired: count,
    PointsReversed(event, batch) {
      const row = dayOf(event, batch);
      if (row) row.expired -= event.data.from_expired;
    },
  },
  async end({ trx, days }) {
    await insertDays(trx, [...days.values()].flatMap((byDay) => [...byDay.values()]));
  },
});

interface Batch {
  trx: Transaction<Database>;
  /** The batch's sums by business, then by UTC day (days since the epoch). */
  days: Map<string, Map<number, DayRow>>;
}

type DayRow = Record<string, unknown> & Record<Figure, number>;

const DAY_MS = 86_400_000;

/** Adds a ledger line's points to its business's day. */
function count(event: LedgerSource & { metadata: { business_id: string } }, batch: Batch): void {
  dayOf(event, batch);
}

/** Adds a ledger line's points to its business's day; the day's row, or null when the event made no line. */
function dayOf(event: LedgerSource & { metadata: { business_id: string } }, { days }: Batch): DayRow | null {
  const line = ledgerEntryFromEvent(event);
  if (!line) return null;
  const businessId = event.metadata.business_id;
  // By day number: a page of a rebuild looks up a day per event, and a date string per event was
  // most of this projector's time.
  const day = Math.floor(event.recordedAt.getTime() / DAY_MS);
  let byDay = days.get(businessId);
  if (!byDay) days.set(businessId, (byDay = new Map()));
  let row = byDay.get(day);
  if (!row) byDay.set(day, (row = { business_id: businessId, day: new Date(day * DAY_MS).toISOString().slice(0, 10), issued: 0, redeemed: 0, expired: 0 }));
  const counts = COUNTS[line.type];
  if (counts) row[counts.figure] += counts.sign * line.amount;
  return row;
}

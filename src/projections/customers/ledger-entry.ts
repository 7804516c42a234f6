import { streams } from '../../events/streams.js';
import type { Decoded } from '../../events/decode.js';
import type { StoredEvent } from '../../store/event-store.js';
import type { LedgerType } from '../../db/schema.js';

export type { LedgerType };

/** One line of a customer's points ledger, as the API shows it and `ledger_entries` stores it. */
export interface LedgerEntry {
  id: string;
  customer_id: string;
  type: LedgerType;
  /** Points moved, as the request gave them (deductions and redemptions are positive; `type` says the direction). */
  amount: number;
  balance: number;
  base_amount: number | null;
  multiplier: number | null;
  description: string | null;
  reference: string | null;
  metadata: Record<string, unknown>;
  /** A credit's lot times (CONTRACT.md §13); null for debits and credits with none. */
  available_at: Date | null;
  expires_at: Date | null;
  /** A reversal's credit; null on every other line. */
  reversed_transaction_id: string | null;
  created_at: Date;
}

/** What a ledger line is made from: a decoded event's stream, type, data and time. */
export type LedgerSource = Decoded<Pick<StoredEvent, 'streamId' | 'type' | 'data' | 'recordedAt'>>;

/** The fields of a line that come from the event's data. */
type LineFields = Omit<LedgerEntry, 'customer_id' | 'created_at' | 'base_amount' | 'multiplier' | 'available_at' | 'expires_at' | 'reversed_transaction_id'> &
  Partial<Pick<LedgerEntry, 'base_amount' | 'multiplier' | 'reversed_transaction_id'>> & {
    /** A credit's lot times as its event recorded them (ISO). */
    times?: { available_at: string | null; expires_at: string | null };
  };

const instant = (iso: string | null | undefined) => (iso == null ? null : new Date(iso));

/**
 * One literal with every key, in one order: cheap to build (a rebuild makes a million of them; a
 * spread of a shared part whose keys are then overridden costs V8 about 100 times as much).
 */
function line(event: LedgerSource, f: LineFields): LedgerEntry {
  return {
    customer_id: streams.customerIdOf(event.streamId),
    created_at: event.recordedAt,
    base_amount: f.base_amount ?? null,
    multiplier: f.multiplier ?? null,
    id: f.id,
    type: f.type,
    amount: f.amount,
    balance: f.balance,
    description: f.description,
    reference: f.reference,
    metadata: f.metadata,
    available_at: instant(f.times?.available_at),
    expires_at: instant(f.times?.expires_at),
    reversed_transaction_id: f.reversed_transaction_id ?? null,
  };
}

/**
 * The ledger line a balance-changing event makes, or null when it moves no points (a 0-point
 * event, an achievement that costs nothing). The projector stores exactly this.
 */
export function ledgerEntryFromEvent(event: LedgerSource): LedgerEntry | null {
  switch (event.type) {
    case 'PointsEarned': {
      const { data } = event;
      return line(event, {
        id: data.transaction_id,
        type: 'earn',
        amount: data.amount,
        balance: data.balance,
        base_amount: data.base_amount,
        multiplier: data.multiplier,
        description: data.description,
        reference: data.reference,
        metadata: data.metadata,
        times: data,
      });
    }
    case 'PointsDeducted':
    case 'PointsAdjusted': {
      const { data } = event;
      return line(event, {
        id: data.transaction_id,
        type: event.type === 'PointsDeducted' ? 'deduct' : 'adjust',
        amount: data.amount,
        balance: data.balance,
        description: data.description,
        reference: data.reference,
        metadata: data.metadata,
        times: 'available_at' in data ? data : undefined,
      });
    }
    case 'EventRecorded': {
      const { data } = event;
      if (data.points_awarded === 0) return null;
      return line(event, {
        id: data.event_id,
        type: 'event',
        amount: data.points_awarded,
        balance: data.balance,
        base_amount: data.base_points,
        multiplier: data.multiplier,
        description: data.event_type,
        reference: data.reference,
        metadata: {},
        times: data,
      });
    }
    case 'RewardRedeemed': {
      const { data } = event;
      if (data.points_cost === 0) return null;
      return line(event, {
        id: data.redemption_id,
        type: 'redemption',
        amount: data.points_cost,
        balance: data.balance,
        description: data.reward_title,
        reference: data.reference,
        metadata: data.metadata,
      });
    }
    case 'RedemptionCancelled': {
      const { data } = event;
      if (data.points_cost === 0) return null;
      return line(event, {
        id: data.transaction_id,
        type: 'redemption_cancelled',
        amount: data.points_cost,
        balance: data.balance,
        description: `cancelled ${data.redemption_id}`,
        reference: null,
        metadata: {},
      });
    }
    case 'PointsReleased': {
      const { data } = event;
      return line(event, {
        id: data.transaction_id,
        type: 'release',
        amount: data.amount,
        balance: data.balance,
        description: `released ${data.lot_transaction_id}`,
        reference: null,
        metadata: {},
      });
    }
    case 'PointsExpired': {
      const { data } = event;
      if (data.amount === 0) return null;
      return line(event, {
        id: data.transaction_id,
        type: 'expire',
        amount: data.amount,
        balance: data.balance,
        description: data.lots.length === 1 ? `expired ${data.lots[0]!.transaction_id}` : `expired ${data.lots.length} lots`,
        reference: null,
        metadata: {},
      });
    }
    case 'PointsReversed': {
      const { data } = event;
      return line(event, {
        id: data.transaction_id,
        type: 'reversal',
        amount: data.amount,
        balance: data.balance,
        description: data.description ?? `reversed ${data.reversed_transaction_id}`,
        reference: data.reference,
        metadata: data.metadata,
        reversed_transaction_id: data.reversed_transaction_id,
      });
    }
    default:
      return null;
  }
}

import { streams } from '../../commands/streams.js';
import type { StoredEvent } from '../../store/event-store.js';

/** One line of a customer's points ledger, as the API shows it and `ledger_entries` stores it. */
export interface LedgerEntry {
  id: string;
  customer_id: string;
  type: string;
  amount: number;
  balance: number;
  base_amount: number | null;
  multiplier: number | null;
  description: string | null;
  reference: string | null;
  metadata: Record<string, unknown>;
  created_at: Date;
}

const LEDGER_TYPES = {
  PointsEarned: 'earn',
  PointsDeducted: 'deduct',
  PointsAdjusted: 'adjust',
} as const;

export const LEDGER_EVENT_TYPES = new Set(Object.keys(LEDGER_TYPES));

/** The ledger line a balance-changing event makes; the projector stores exactly this. */
export function ledgerEntryFromEvent(event: StoredEvent): LedgerEntry {
  const data = event.data;
  return {
    id: data.transaction_id,
    customer_id: streams.customerIdOf(event.streamId),
    type: LEDGER_TYPES[event.type as keyof typeof LEDGER_TYPES],
    amount: data.amount,
    balance: data.balance,
    base_amount: data.base_amount ?? null,
    multiplier: data.multiplier ?? null,
    description: data.description ?? null,
    reference: data.reference ?? null,
    metadata: data.metadata ?? {},
    created_at: event.recordedAt,
  };
}

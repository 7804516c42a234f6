import { customerDecider } from '../commands/customer/customer-decider.js';
import { CUSTOMER_EVENT_TYPES } from '../events/customer-events.js';
import { type Decoded, decodeAll, ofTypes } from '../events/decode.js';
import { counted } from '../plural.js';
import { ledgerEntryFromEvent } from '../projections/customers/ledger-entry.js';
import type { LotStatus } from '../events/lots.js';
import type { StoredEvent } from '../store/event-store.js';

/** One line of a customer's statement: an event and the customer's state right after it. */
export interface StatementLine {
  position: number;
  type: string;
  recorded_at: string;
  /** What the event did, in a few words (`earn 120`, `tier Silver`, `email changed`). */
  change: string;
  balance: number;
  lifetime_earned: number;
  lifetime_redeemed: number;
  pending: number;
  lifetime_expired: number;
  tier: { id: string; name: string } | null;
  /** The customer's lots after the event (CONTRACT.md §13), in the order they were made. */
  lots: StatementLot[];
}

export interface StatementLot {
  transaction_id: string;
  amount: number;
  remaining: number;
  reversed: number;
  status: LotStatus;
  expires_at: string | null;
}

/** Folds the stream one event at a time, keeping every intermediate state. Pure. */
export function replayCustomer(events: readonly StoredEvent[]): StatementLine[] {
  let state = customerDecider.initialState();
  return decodeAll(events).filter(ofTypes(CUSTOMER_EVENT_TYPES)).map((event) => {
    state = customerDecider.evolve(state, event);
    return {
      position: event.streamPosition,
      type: event.type,
      recorded_at: event.recordedAt.toISOString(),
      change: describeChange(event),
      balance: state.balance,
      lifetime_earned: state.lifetimeEarned,
      lifetime_redeemed: state.lifetimeRedeemed,
      pending: state.pending,
      lifetime_expired: state.lifetimeExpired,
      tier: state.tier ? { id: state.tier.id, name: state.tier.name } : null,
      lots: state.lots.values().map((lot) => ({
        transaction_id: lot.transactionId,
        amount: lot.amount,
        remaining: lot.remaining,
        reversed: lot.reversed,
        status: lot.status,
        expires_at: lot.expiresAt,
      })),
    };
  });
}

function describeChange(event: Decoded<StoredEvent>): string {
  const line = ledgerEntryFromEvent(event);
  if (line) return `${line.type} ${line.amount}${line.reference ? ` (ref ${line.reference})` : ''}`;
  switch (event.type) {
    case 'CustomerRegistered':
      return 'registered';
    case 'CustomerUpdated':
      return `${Object.keys(event.data).join(', ')} changed`;
    case 'TierUpgraded':
      return `tier ${event.data.previous_tier?.name ?? '(none)'} → ${event.data.new_tier.name}`;
    case 'EventRecorded':
      return `event ${event.data.event_type} (0 points)`;
    case 'TierDowngraded':
      return `tier ${event.data.previous_tier.name} → ${event.data.new_tier?.name ?? '(none)'}`;
    case 'PointsExpiringNotified':
      return `notice ${event.data.amount} of ${event.data.lot_transaction_id} expiring ${event.data.expires_at}`;
    case 'RewardRedeemed':
      return `redemption of ${event.data.reward_title} (0 points)`;
    default:
      return '';
  }
}

/** The statement as a fixed-width table for a terminal. */
export function formatStatement(customerId: string, lines: readonly StatementLine[]): string {
  const header = ['pos', 'recorded_at', 'event', 'change', 'balance', 'earned', 'redeemed', 'tier', 'lots (points left)'];
  const rows = lines.map((l) => [
    String(l.position),
    l.recorded_at,
    l.type,
    l.change,
    String(l.balance),
    String(l.lifetime_earned),
    String(l.lifetime_redeemed),
    l.tier?.name ?? '-',
    describeLots(l.lots),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const numeric = new Set([0, 4, 5, 6]);
  const format = (cells: string[]) =>
    cells.map((c, i) => (numeric.has(i) ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join('  ').trimEnd();
  return [`Statement of customer ${customerId} (${counted(lines.length, 'event')})`, format(header), ...rows.map(format)].join('\n');
}

/** Lots with points left, e.g. `txn_a 70 (expires 2027-01-01T00:00:00.000Z), txn_b 30 pending`. */
function describeLots(lots: readonly StatementLot[]): string {
  const open = lots.filter((lot) => lot.remaining > 0);
  if (open.length === 0) return '-';
  return open
    .map((lot) => {
      const pending = lot.status === 'pending' ? ' pending' : '';
      const expires = lot.expires_at ? ` (expires ${lot.expires_at})` : '';
      return `${lot.transaction_id} ${lot.remaining}${pending}${expires}`;
    })
    .join(', ');
}

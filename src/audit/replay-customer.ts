import { customerDecider } from '../commands/customer/customer-decider.js';
import { CUSTOMER_EVENT_TYPES } from '../events/customer-events.js';
import { type Decoded, decodeAll, ofTypes } from '../events/decode.js';
import { counted } from '../plural.js';
import { ledgerEntryFromEvent } from '../projections/customers/ledger-entry.js';
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
  tier: { id: string; name: string } | null;
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
      tier: state.tier ? { id: state.tier.id, name: state.tier.name } : null,
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
    case 'RewardRedeemed':
      return `redemption of ${event.data.reward_title} (0 points)`;
    default:
      return '';
  }
}

/** The statement as a fixed-width table for a terminal. */
export function formatStatement(customerId: string, lines: readonly StatementLine[]): string {
  const header = ['pos', 'recorded_at', 'event', 'change', 'balance', 'earned', 'redeemed', 'tier'];
  const rows = lines.map((l) => [
    String(l.position),
    l.recorded_at,
    l.type,
    l.change,
    String(l.balance),
    String(l.lifetime_earned),
    String(l.lifetime_redeemed),
    l.tier?.name ?? '-',
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const numeric = new Set([0, 4, 5, 6]);
  const format = (cells: string[]) =>
    cells.map((c, i) => (numeric.has(i) ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join('  ').trimEnd();
  return [`Statement of customer ${customerId} (${counted(lines.length, 'event')})`, format(header), ...rows.map(format)].join('\n');
}

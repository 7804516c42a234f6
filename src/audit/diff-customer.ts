import { customerDecider, type CustomerState } from '../commands/customer/customer-decider.js';
import { pending, spendable } from '../events/lots.js';
import { fold } from '../commands/decider.js';
import type { Selectable } from 'kysely';
import type { CustomersTable, LedgerEntriesTable } from '../db/schema.js';
import { sameJson } from '../json-equality.js';
import { type LedgerEntry, ledgerEntryFromEvent } from '../projections/customers/ledger-entry.js';
import { CUSTOMER_EVENT_TYPES } from '../events/customer-events.js';
import { decodeAll, ofTypes } from '../events/decode.js';
import type { StoredEvent } from '../store/event-store.js';

const isCustomerEvent = ofTypes(CUSTOMER_EVENT_TYPES);

/** A read-model value that is not what the log says it should be. */
export interface Drift {
  customerId: string;
  /** `points_balance`, `tier_id`, `ledger_entries[txn_…].amount`, … */
  field: string;
  /** What folding the stream gives. */
  log: unknown;
  /** What the read model holds. */
  readModel: unknown;
}

export type CustomerRow = Selectable<CustomersTable>;
export type LedgerRow = Selectable<LedgerEntriesTable>;

/** Marks a row or line that exists on one side only. */
export const ABSENT = '(absent)';

const LEDGER_FIELDS = ['type', 'amount', 'balance', 'base_amount', 'multiplier', 'description', 'reference', 'metadata', 'created_at'] as const;

/**
 * Folds a customer's events with the customer decider and compares the result with its
 * `customers` row and its `ledger_entries` (in `seq` order). Pure: the caller reads both sides
 * from one consistent point (events up to the customers projector's checkpoint).
 */
export function diffCustomer(customerId: string, events: readonly StoredEvent[], row: CustomerRow | undefined, ledger: readonly LedgerRow[]): Drift[] {
  const drifts: Drift[] = [];
  const drift = (field: string, log: unknown, readModel: unknown) => drifts.push({ customerId, field, log, readModel });
  const decoded = decodeAll(events).filter(isCustomerEvent);
  let state: CustomerState;
  try {
    state = fold(customerDecider, decoded);
  } catch (error) {
    // The log itself does not add up (a debit takes more than its lot holds, say): nothing to compare with.
    drift('lots', `the stream does not fold: ${(error as Error).message}`, ABSENT);
    return drifts;
  }
  drifts.push(...lotDrifts(customerId, state));

  if (!state.registered || !row) {
    if (state.registered !== !!row) drift('customers row', state.registered ? 'registered' : ABSENT, row ? 'present' : ABSENT);
  } else {
    const expected = {
      business_id: state.businessId,
      ...state.profile,
      points_balance: state.balance,
      lifetime_earned: state.lifetimeEarned,
      lifetime_redeemed: state.lifetimeRedeemed,
      tier_id: state.tier?.id ?? null,
      // The lifecycle's columns, where the read model has them.
      ...(Object.hasOwn(row, 'points_pending') ? { points_pending: state.pending } : {}),
      ...(Object.hasOwn(row, 'lifetime_expired') ? { lifetime_expired: state.lifetimeExpired } : {}),
    };
    for (const [field, value] of Object.entries(expected)) {
      const held = (row as unknown as Record<string, unknown>)[field];
      if (!sameValue(value, held)) drift(field, value, held);
    }
  }

  const lines = decoded.map(ledgerEntryFromEvent).filter((l): l is LedgerEntry => l !== null);
  const held = new Map(ledger.map((r) => [r.id, r]));
  for (const line of lines) {
    const row = held.get(line.id);
    if (!row) {
      drift(`ledger_entries[${line.id}]`, `${line.type} ${line.amount}`, ABSENT);
      continue;
    }
    for (const field of LEDGER_FIELDS) {
      if (!sameValue(line[field], row[field])) drift(`ledger_entries[${line.id}].${field}`, line[field], row[field]);
    }
  }
  const expectedIds = new Set(lines.map((l) => l.id));
  for (const row of ledger) {
    if (!expectedIds.has(row.id)) drift(`ledger_entries[${row.id}]`, ABSENT, `${row.type} ${row.amount}`);
  }
  const logOrder = lines.map((l) => l.id).filter((id) => held.has(id));
  const heldOrder = ledger.map((r) => r.id).filter((id) => expectedIds.has(id));
  if (logOrder.join() !== heldOrder.join()) drift('ledger_entries order', logOrder.join(', '), heldOrder.join(', '));
  return drifts;
}

/**
 * What the folded lots must agree with (CONTRACT.md §13): balance = the available lots' remaining
 * points, pending = the pending lots', and balance = earned − redeemed − expired − pending. The
 * events carry balances; lots are folded from their shares, so an edited event shows here.
 */
function lotDrifts(customerId: string, state: CustomerState): Drift[] {
  if (!state.registered) return [];
  const checks: Array<[string, number, number]> = [
    ['balance (sum of available lots)', spendable(state.lots.values()), state.balance],
    ['points_pending (sum of pending lots)', pending(state.lots.values()), state.pending],
    ['balance (earned − redeemed − expired − pending)', state.lifetimeEarned - state.lifetimeRedeemed - state.lifetimeExpired - state.pending, state.balance],
  ];
  return checks.filter(([, lots, held]) => lots !== held).map(([field, lots, held]) => ({ customerId, field, log: lots, readModel: held }));
}

/** A row of a lots read model, as `diffLots` compares it. */
export interface LotRow {
  transaction_id: string;
  amount: number | string;
  remaining: number | string;
  reversed: number | string;
  status: string;
  available_at: Date | string | null;
  expires_at: Date | string | null;
}

/** The customer's lots as the log folds them against a lots read model's rows (any order). */
export function diffLots(customerId: string, events: readonly StoredEvent[], rows: readonly LotRow[]): Drift[] {
  const drifts: Drift[] = [];
  let state: CustomerState;
  try {
    state = fold(customerDecider, decodeAll(events).filter(isCustomerEvent));
  } catch {
    return drifts; // diffCustomer reports it
  }
  const held = new Map(rows.map((r) => [r.transaction_id, r]));
  for (const lot of state.lots.values()) {
    const row = held.get(lot.transactionId);
    const name = `lots[${lot.transactionId}]`;
    if (!row) {
      drifts.push({ customerId, field: name, log: `${lot.status} ${lot.remaining}`, readModel: ABSENT });
      continue;
    }
    const expected = { amount: lot.amount, remaining: lot.remaining, reversed: lot.reversed, status: lot.status, expires_at: lot.expiresAt };
    for (const [field, value] of Object.entries(expected)) {
      const value2 = (row as unknown as Record<string, unknown>)[field];
      if (!sameValue(value, value2)) drifts.push({ customerId, field: `${name}.${field}`, log: value, readModel: value2 });
    }
    held.delete(lot.transactionId);
  }
  for (const row of held.values()) drifts.push({ customerId, field: `lots[${row.transaction_id}]`, log: ABSENT, readModel: `${row.status} ${row.remaining}` });
  return drifts;
}

/** Equality across the shapes the database hands back: bigint and numeric as text, jsonb key order, timestamps. */
function sameValue(log: unknown, held: unknown): boolean {
  if (log === null || held === null || log === undefined || held === undefined) return (log ?? null) === (held ?? null);
  if (log instanceof Date || held instanceof Date) return new Date(log as Date).getTime() === new Date(held as Date).getTime();
  if (typeof log === 'number') return log === Number(held);
  return sameJson(log, held);
}

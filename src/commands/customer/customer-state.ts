import type { EventOf } from '../../events/catalogue.js';
import { type CustomerProfile, EMPTY_PROFILE, type TierSnapshot } from '../../events/customer-events.js';
import { DEFAULT_PROGRAM_SETTINGS, type ProgramSettings, type TierDefinition } from '../../events/program-events.js';
import { List } from 'immutable';
import { IdMap } from './id-map.js';
import { LotLedger } from './lot-ledger.js';
import type { Lot, Share } from '../../events/lots.js';
import { type CreditSeries, creditSeries, mergedSeries, type QualifyingCredit } from './rolling-tiers.js';

export type CustomerEvent = EventOf<
  | 'CustomerRegistered'
  | 'CustomerUpdated'
  | 'PointsEarned'
  | 'PointsDeducted'
  | 'PointsAdjusted'
  | 'TierUpgraded'
  | 'EventRecorded'
  | 'RewardRedeemed'
  | 'RedemptionCancelled'
  | 'PointsReleased'
  | 'PointsExpiringNotified'
  | 'PointsExpired'
  | 'PointsReversed'
  | 'TierDowngraded'
>;

/**
 * A customer event as folded: with the time it was recorded (stored events have it in their
 * envelope; a decision folds its own events at its clock time). Lots and the rolling tier window
 * need it; without it (hand-made events in tests) the epoch stands in.
 */
export type TimedCustomerEvent = CustomerEvent & { recordedAt?: Date };

/** Due-work events: appended before (and after) a command's own, never its answer. */
export const DUE_EVENT_TYPES: ReadonlySet<string> = new Set(['PointsReleased', 'PointsExpiringNotified', 'PointsExpired', 'TierDowngraded']);

export interface Redemption {
  rewardId: string;
  rewardType: string;
  pointsCost: number;
  cancelled: boolean;
  /** The lots it took its points from: a cancellation gives them back there. */
  lots: Share[];
}

/** The business's lifecycle policy as a customer decision needs it. */
export interface LifecyclePolicy {
  settings: ProgramSettings;
  /** When tier qualification's mode or window last changed (ISO), null when never. */
  qualificationSince: string | null;
  /** The business's tiers as they are now. */
  tiers: readonly TierDefinition[];
}

/** A customer decision's clock time and policy. */
export interface Lifecycle extends LifecyclePolicy {
  now: Date;
}

export const DEFAULT_POLICY: LifecyclePolicy = { settings: DEFAULT_PROGRAM_SETTINGS, qualificationSince: null, tiers: [] };

export interface CustomerState {
  registered: boolean;
  id: string | null;
  businessId: string | null;
  profile: CustomerProfile;
  /** Spendable points: the remaining points of available lots. */
  balance: number;
  /** Points of pending lots (not spendable yet). */
  pending: number;
  lifetimeEarned: number;
  lifetimeRedeemed: number;
  lifetimeExpired: number;
  /** The tier held now (as reached); its current multiplier applies to the next earn. */
  tier: TierSnapshot | null;
  /** The last instant the held tier was evaluated against the points that qualify (ISO). */
  tierCheckedAt: string | null;
  /** One per credit, in the order made (CONTRACT.md §13). */
  lots: LotLedger;
  /** Negative adjusts: negative credits for rolling tier qualification. */
  negativeCredits: List<QualifyingCredit>;
  /** Ledger lines that made no lot, for the answer to a reversal of one: a debit, release, expiry or reversal, or a credit of 0 points. */
  otherLines: IdMap<'not_credit' | 'empty_credit'>;
  redemptions: IdMap<Redemption>;
}

export const MAX_POINTS = Number.MAX_SAFE_INTEGER;
const EPOCH = '1970-01-01T00:00:00.000Z';

export function initialCustomerState(): CustomerState {
  return {
    registered: false,
    id: null,
    businessId: null,
    profile: EMPTY_PROFILE,
    balance: 0,
    pending: 0,
    lifetimeEarned: 0,
    lifetimeRedeemed: 0,
    lifetimeExpired: 0,
    tier: null,
    tierCheckedAt: null,
    lots: LotLedger.EMPTY,
    negativeCredits: List(),
    otherLines: IdMap.empty(),
    redemptions: IdMap.empty(),
  };
}

/**
 * What a state weighs in the state cache (src/commands/state-cache.ts): what a customer's grows
 * with, one per lot (about 273 bytes each in memory) and one per other ledger line and redemption
 * it keeps (about 130), plus one; any other aggregate's state, one.
 */
export function cachedWeight(state: unknown): number {
  const customer = state as Partial<CustomerState> | null | undefined;
  if (!(customer?.lots instanceof LotLedger)) return 1;
  return 1 + customer.lots.size + (customer.otherLines?.size ?? 0) + (customer.redemptions?.size ?? 0);
}

/** The credits rolling qualification counts: every lot net of its reversals, and the negative adjusts. */
export function qualifyingCredits(state: CustomerState): CreditSeries {
  return state.negativeCredits.size === 0 ? state.lots.credits() : mergedSeries(state.lots.credits(), creditSeries(state.negativeCredits));
}

export function evolveCustomer(state: CustomerState, event: TimedCustomerEvent): CustomerState {
  const at = event.recordedAt?.toISOString() ?? EPOCH;
  switch (event.type) {
    case 'CustomerRegistered': {
      const { customer_id, business_id, ...profile } = event.data;
      return { ...state, registered: true, id: customer_id, businessId: business_id, profile };
    }
    case 'CustomerUpdated':
      return { ...state, profile: { ...state.profile, ...definedOnly(event.data) } };
    case 'PointsEarned':
      return credited(state, event.data.transaction_id, event.data.amount, event.data.balance, event.data, at);
    case 'EventRecorded':
      return credited(state, event.data.event_id, event.data.points_awarded, event.data.balance, event.data, at);
    case 'PointsAdjusted':
      if (event.data.amount > 0) return credited(state, event.data.transaction_id, event.data.amount, event.data.balance, event.data, at);
      return {
        ...debited(state, event.data.transaction_id, -event.data.amount, event.data.lots, event.data.balance),
        lifetimeEarned: state.lifetimeEarned + event.data.amount,
        negativeCredits: state.negativeCredits.push({ at, amount: event.data.amount }),
        tierCheckedAt: at,
      };
    case 'PointsDeducted':
      return {
        ...debited(state, event.data.transaction_id, event.data.amount, event.data.lots, event.data.balance),
        lifetimeRedeemed: state.lifetimeRedeemed + event.data.amount,
      };
    case 'TierUpgraded':
      return { ...state, tier: event.data.new_tier, tierCheckedAt: at };
    case 'TierDowngraded':
      return { ...state, tier: event.data.new_tier, tierCheckedAt: event.data.downgraded_at };
    case 'RewardRedeemed': {
      const { redemption_id, reward_id, reward_type, points_cost, balance } = event.data;
      const shares = event.data.lots ?? plannedShares(state, points_cost);
      return {
        ...state,
        balance,
        lots: state.lots.takeShares(shares),
        lifetimeRedeemed: state.lifetimeRedeemed + points_cost,
        otherLines: state.otherLines.set(redemption_id, 'not_credit'),
        redemptions: state.redemptions.set(redemption_id, { rewardId: reward_id, rewardType: reward_type, pointsCost: points_cost, cancelled: false, lots: shares }),
      };
    }
    case 'RedemptionCancelled': {
      const redemption = state.redemptions.get(event.data.redemption_id)!;
      return {
        ...state,
        balance: event.data.balance,
        lots: state.lots.returnShares(event.data.lots ?? redemption.lots),
        lifetimeRedeemed: state.lifetimeRedeemed - event.data.points_cost,
        otherLines: state.otherLines.set(event.data.transaction_id, 'not_credit'),
        redemptions: state.redemptions.set(event.data.redemption_id, { ...redemption, cancelled: true }),
      };
    }
    case 'PointsReleased':
      return {
        ...state,
        balance: event.data.balance,
        pending: state.pending - event.data.amount,
        lots: state.lots.release(event.data.lot_transaction_id),
        otherLines: state.otherLines.set(event.data.transaction_id, 'not_credit'),
      };
    case 'PointsExpiringNotified':
      return { ...state, lots: state.lots.notice(event.data.lot_transaction_id) };
    case 'PointsExpired': {
      let { lots, pending } = state;
      for (const share of event.data.lots) {
        // A version 1 event does not say whether its lot was pending: the lot's status does.
        if (event.data.pending === null && lots.get(share.transaction_id)?.status === 'pending') pending -= share.amount;
        lots = lots.expire(share.transaction_id);
      }
      if (event.data.pending !== null) pending -= event.data.pending;
      return {
        ...state,
        balance: event.data.balance,
        pending,
        lots,
        lifetimeExpired: state.lifetimeExpired + event.data.amount,
        otherLines: state.otherLines.set(event.data.transaction_id, 'not_credit'),
      };
    }
    case 'PointsReversed': {
      const { data } = event;
      const wasPending = state.lots.get(data.reversed_transaction_id)?.status === 'pending';
      return {
        ...state,
        balance: data.balance,
        pending: wasPending ? state.pending - data.from_lot : state.pending,
        lots: state.lots.reverse(data.reversed_transaction_id, { fromLot: data.from_lot, fromExpired: data.from_expired, fromBalance: data.lots }),
        lifetimeEarned: state.lifetimeEarned - data.amount,
        lifetimeExpired: state.lifetimeExpired - data.from_expired,
        otherLines: state.otherLines.set(data.transaction_id, 'not_credit'),
        tierCheckedAt: at,
      };
    }
    default: {
      const exhaustive: never = event;
      return exhaustive;
    }
  }
}

/** A credit: a lot when it has points (pending until its `available_at`), lifetime_earned counts it at once. */
function credited(
  state: CustomerState,
  id: string,
  amount: number,
  balance: number,
  times: { available_at: string | null; expires_at: string | null },
  at: string,
): CustomerState {
  const lifetimeEarned = state.lifetimeEarned + amount;
  if (amount <= 0) return { ...state, balance, lifetimeEarned, otherLines: state.otherLines.set(id, 'empty_credit') };
  return {
    ...state,
    balance,
    pending: times.available_at === null ? state.pending : state.pending + amount,
    lifetimeEarned,
    lots: state.lots.credit({ transactionId: id, amount, createdAt: at, availableAt: times.available_at, expiresAt: times.expires_at }),
    tierCheckedAt: at,
  };
}

/** A debit takes the shares its event recorded (events from before lots: planned as they would have been). */
function debited(state: CustomerState, id: string, amount: number, shares: Share[] | undefined, balance: number): CustomerState {
  return {
    ...state,
    balance,
    lots: state.lots.takeShares(shares ?? plannedShares(state, amount)),
    otherLines: state.otherLines.set(id, 'not_credit'),
  };
}

function plannedShares(state: CustomerState, amount: number): Share[] {
  if (amount === 0) return [];
  const shares = state.lots.planDebit(amount);
  if (!shares) throw new Error(`customer ${state.id}: a debit of ${amount} exceeds its available lots`);
  return shares;
}

function definedOnly<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}

import { ApiError, errors } from '../../errors.js';
import type { CustomerProfile } from '../../events/customer-events.js';
import type { EventTypeDefinition, TierDefinition } from '../../events/program-events.js';
import type { RewardDefinition } from '../../events/reward-events.js';
import { changedFields } from '../changed-fields.js';
import type { Decider } from '../decider.js';
import { applyMultiplier, eventPoints, MAX_EVENT_POINTS } from '../program/rules.js';
import {
  type CustomerEvent,
  type CustomerState,
  DEFAULT_POLICY,
  evolveCustomer,
  initialCustomerState,
  type Lifecycle,
  MAX_POINTS,
  qualifyingCredits,
  type Redemption,
  type TimedCustomerEvent,
} from './customer-state.js';
import { decideDue, tierSnapshot } from './due-work.js';
import { List } from 'immutable';
import { IdMap } from './id-map.js';
import { LotLedger, type StoredLot } from './lot-ledger.js';
import { addDays, type QualifyingCredit, qualifyingPoints, tierFor } from './rolling-tiers.js';

export { type CustomerEvent, type CustomerState, type Lifecycle, MAX_POINTS, type Redemption, type TimedCustomerEvent } from './customer-state.js';

export type PointsType = 'earn' | 'deduct' | 'adjust';

/** The business's tiers as they are now: for the multiplier of the held tier and for upgrades. */
type Tiers = readonly TierDefinition[];

/**
 * When a credit's points become spendable and expire, as the request gave them (CONTRACT.md §13):
 * absent: the program's policy; `expiresAt: null`: never.
 */
export interface CreditTimes {
  availableAt?: string | undefined;
  expiresAt?: string | null | undefined;
}

/**
 * Every command but registration decides at `lifecycle.now` under the business's policy: first the
 * due work (releases, expiries, notices, downgrades), then the command, then what the command made
 * due at once. Without `lifecycle` (hand-made commands in tests): the epoch and the default policy.
 */
interface AtLifecycle {
  lifecycle?: Lifecycle | undefined;
}

export type CustomerCommand =
  | { type: 'RegisterCustomer'; customerId: string; businessId: string; profile: CustomerProfile }
  | ({ type: 'UpdateCustomer'; changes: Partial<CustomerProfile> } & AtLifecycle)
  | ({
      type: 'RecordPoints';
      pointsType: PointsType;
      transactionId: string;
      amount: number;
      applyMultiplier: boolean;
      description: string | null;
      reference: string | null;
      metadata: Record<string, unknown>;
      tiers: Tiers;
    } & CreditTimes &
      AtLifecycle)
  | ({
      type: 'RecordEvent';
      eventId: string;
      eventType: EventTypeDefinition;
      properties: Record<string, unknown>;
      reference: string | null;
      tiers: Tiers;
    } & CreditTimes &
      AtLifecycle)
  | ({
      type: 'RedeemReward';
      redemptionId: string;
      reward: RewardDefinition;
      reference: string | null;
      metadata: Record<string, unknown>;
    } & AtLifecycle)
  | ({ type: 'CancelRedemption'; redemptionId: string; transactionId: string } & AtLifecycle)
  | ({
      type: 'ReverseTransaction';
      /** The reversal's own ledger id. */
      transactionId: string;
      /** The credit reversed. */
      reversedId: string;
      /** Absent: all that is not reversed yet. */
      amount?: number | undefined;
      description: string | null;
      reference: string | null;
    } & AtLifecycle)
  /** Only the work due at `lifecycle.now` (the scheduler's command): [] when nothing is due. */
  | { type: 'ApplyDueWork'; lifecycle: Lifecycle };

type Own<T extends CustomerCommand['type']> = Extract<CustomerCommand, { type: T }>;

const EPOCH = new Date(0);

export const customerDecider: Decider<CustomerCommand, CustomerState, TimedCustomerEvent> = {
  initialState: initialCustomerState,
  evolve: evolveCustomer,
  // A snapshot holds the lots as an array of StoredLot (LotLedger.toJSON).
  revive: (snapshot) => ({
    ...snapshot,
    lots: LotLedger.fromSnapshot(snapshot.lots as unknown as StoredLot[]),
    otherLines: IdMap.fromJSON(snapshot.otherLines as unknown as Record<string, 'not_credit' | 'empty_credit'>),
    redemptions: IdMap.fromJSON(snapshot.redemptions as unknown as Record<string, Redemption>),
    negativeCredits: List(snapshot.negativeCredits as unknown as QualifyingCredit[]),
  }),

  decide(command, state) {
    if (command.type === 'RegisterCustomer') {
      if (state.registered) throw errors.conflict(`Customer '${command.customerId}' already exists.`);
      return [
        {
          type: 'CustomerRegistered',
          data: { customer_id: command.customerId, business_id: command.businessId, ...command.profile },
        },
      ];
    }
    if (!state.registered) throw errors.customerNotFound(state.id ?? 'unknown');
    const lifecycle: Lifecycle = {
      ...(command.lifecycle ?? { ...DEFAULT_POLICY, now: EPOCH }),
      ...('tiers' in command ? { tiers: command.tiers } : {}),
    };
    const fold = (from: CustomerState, events: CustomerEvent[]) =>
      events.reduce((s, e) => evolveCustomer(s, { ...e, recordedAt: lifecycle.now }), from);
    const due = decideDue(state, lifecycle);
    const own = decideOwn(command, due.after, lifecycle);
    const after = own.length === 0 ? [] : decideDue(fold(due.after, own), lifecycle).events;
    return [...due.events, ...own, ...after];
  },
};

/** The command's own events, decided on the state after the due work. */
function decideOwn(command: Exclude<CustomerCommand, Own<'RegisterCustomer'>>, state: CustomerState, lifecycle: Lifecycle): CustomerEvent[] {
  switch (command.type) {
    case 'ApplyDueWork':
      return [];
    case 'UpdateCustomer': {
      const changed = changedFields(state.profile, command.changes);
      const after = { ...state.profile, ...changed };
      if (after.email === null && after.phone === null) {
        throw errors.validation([{ path: 'email', message: 'a customer must keep an email or a phone' }]);
      }
      return Object.keys(changed).length === 0 ? [] : [{ type: 'CustomerUpdated', data: changed }];
    }
    case 'RecordPoints':
      return withTierUpgrade(state, recordPoints(command, state, lifecycle), lifecycle);
    case 'RecordEvent':
      return withTierUpgrade(state, recordEvent(command, state, lifecycle), lifecycle);
    case 'RedeemReward':
      return [redeem(command, state)];
    case 'CancelRedemption':
      return [cancelRedemption(command, state)];
    case 'ReverseTransaction':
      return [reverse(command, state)];
    default: {
      const exhaustive: never = command;
      return exhaustive;
    }
  }
}

/** The multiplier of the tier held before this command, as the tier is defined now. */
function heldMultiplier(state: CustomerState, tiers: Tiers): number {
  if (!state.tier) return 1;
  return tiers.find((t) => t.tier_id === state.tier!.id)?.multiplier ?? state.tier.multiplier;
}

/**
 * A credit's `available_at` and `expires_at`: as given (each in the future, expiry after
 * availability), else by the policy (pending_days; points_expiry_days counted from availability).
 */
export function creditTimes(times: CreditTimes, lifecycle: Lifecycle): { available_at: string | null; expires_at: string | null } {
  const now = lifecycle.now.getTime();
  const issues: Array<{ path: string; message: string }> = [];
  const given = (field: 'available_at' | 'expires_at', value: string | null | undefined) => {
    if (value === undefined || value === null) return value;
    const t = Date.parse(value);
    if (Number.isNaN(t)) issues.push({ path: field, message: 'must be an ISO 8601 date-time' });
    else if (t <= now) issues.push({ path: field, message: 'must be in the future' });
    return Number.isNaN(t) ? null : new Date(t).toISOString();
  };
  const availableGiven = given('available_at', times.availableAt);
  const expiresGiven = given('expires_at', times.expiresAt);
  if (issues.length > 0) throw errors.validation(issues);
  const { pending_days, points_expiry_days } = lifecycle.settings;
  const available_at = availableGiven ?? (pending_days > 0 ? addDays(lifecycle.now, pending_days) : null);
  const expires_at =
    expiresGiven !== undefined ? expiresGiven : points_expiry_days === null ? null : addDays(available_at ?? lifecycle.now, points_expiry_days);
  if (expires_at !== null && available_at !== null && expires_at <= available_at) {
    throw errors.validation([{ path: 'expires_at', message: `must be after available_at (${available_at})` }]);
  }
  return { available_at, expires_at };
}

/** Credited points go to the balance at once, or to pending until their lot is released. */
function balanceAfterCredit(state: CustomerState, amount: number, availableAt: string | null): number {
  return availableAt === null ? state.balance + amount : state.balance;
}

/** The lots a debit of `amount` takes, or 422 `insufficient_points`. */
function debitShares(state: CustomerState, amount: number) {
  const shares = amount > state.balance ? null : state.lots.planDebit(amount);
  if (!shares) throw errors.insufficientPoints(state.balance, amount);
  return shares;
}

function recordPoints(command: Own<'RecordPoints'>, state: CustomerState, lifecycle: Lifecycle): CustomerEvent {
  const { pointsType, amount } = command;
  const base = {
    transaction_id: command.transactionId,
    description: command.description,
    reference: command.reference,
    metadata: command.metadata,
  };
  if (!Number.isSafeInteger(amount) || amount === 0 || (pointsType !== 'adjust' && amount < 0)) {
    throw errors.validation([{ path: 'amount', message: `must be a ${pointsType === 'adjust' ? 'non-zero' : 'positive'} integer` }]);
  }
  const isCredit = pointsType === 'earn' || amount > 0;
  if (!isCredit) {
    const field = command.availableAt !== undefined ? 'available_at' : command.expiresAt !== undefined ? 'expires_at' : null;
    if (field) throw errors.validation([{ path: field, message: 'only a credit (earn, positive adjust) has one' }]);
  }
  switch (pointsType) {
    case 'earn': {
      const multiplier = command.applyMultiplier ? heldMultiplier(state, command.tiers) : 1;
      const credited = applyMultiplier(amount, multiplier);
      if (credited > MAX_EVENT_POINTS) {
        throw errors.pointsOutOfRange(
          `With the tier multiplier ${multiplier} this earn would credit ${credited.toLocaleString('en-US')} points, more than the ${MAX_EVENT_POINTS.toLocaleString('en-US')} one amount may be; nothing was recorded.`,
        );
      }
      const times = creditTimes(command, lifecycle);
      assertCreditFits(state, credited);
      return {
        type: 'PointsEarned',
        data: { ...base, amount: credited, base_amount: amount, multiplier, balance: balanceAfterCredit(state, credited, times.available_at), ...times },
      };
    }
    case 'deduct': {
      const lots = debitShares(state, amount);
      return { type: 'PointsDeducted', data: { ...base, amount, balance: state.balance - amount, lots } };
    }
    case 'adjust': {
      if (amount < 0) {
        const lots = debitShares(state, -amount);
        return { type: 'PointsAdjusted', data: { ...base, amount, balance: state.balance + amount, available_at: null, expires_at: null, lots } };
      }
      const times = creditTimes(command, lifecycle);
      assertCreditFits(state, amount);
      return { type: 'PointsAdjusted', data: { ...base, amount, balance: balanceAfterCredit(state, amount, times.available_at), ...times } };
    }
  }
}

function recordEvent(command: Own<'RecordEvent'>, state: CustomerState, lifecycle: Lifecycle): CustomerEvent {
  const multiplier = heldMultiplier(state, command.tiers);
  const { base, awarded } = eventPoints(command.eventType, command.properties, multiplier);
  const times = creditTimes(command, lifecycle);
  assertCreditFits(state, awarded);
  return {
    type: 'EventRecorded',
    data: {
      event_id: command.eventId,
      event_type: command.eventType.name,
      properties: command.properties,
      reference: command.reference,
      base_points: base,
      multiplier,
      points_awarded: awarded,
      balance: awarded === 0 ? state.balance : balanceAfterCredit(state, awarded, times.available_at),
      ...times,
    },
  };
}

function redeem(command: Own<'RedeemReward'>, state: CustomerState): CustomerEvent {
  const { reward } = command;
  if (!reward.active) throw new ApiError(422, 'reward_inactive', `Reward '${reward.reward_id}' is not active.`);
  if (
    reward.reward_type === 'achievement' &&
    state.redemptions.values().some((r) => r.rewardId === reward.reward_id && !r.cancelled)
  ) {
    throw new ApiError(409, 'achievement_already_granted', `Achievement '${reward.reward_id}' was already granted to this customer.`);
  }
  const lots = debitShares(state, reward.points_cost);
  return {
    type: 'RewardRedeemed',
    data: {
      redemption_id: command.redemptionId,
      reward_id: reward.reward_id,
      reward_title: reward.title,
      reward_type: reward.reward_type,
      points_cost: reward.points_cost,
      reference: command.reference,
      metadata: command.metadata,
      balance: state.balance - reward.points_cost,
      lots,
    },
  };
}

/** Gives the points back to the lots they came from; one whose lot expired meanwhile expires again at once (due work after). */
function cancelRedemption(command: Own<'CancelRedemption'>, state: CustomerState): CustomerEvent {
  const redemption = state.redemptions.get(command.redemptionId);
  if (!redemption) throw errors.redemptionNotFound(command.redemptionId);
  if (redemption.cancelled) {
    throw new ApiError(409, 'redemption_already_cancelled', `Redemption '${command.redemptionId}' is already cancelled.`);
  }
  assertCreditFits(state, redemption.pointsCost, false);
  return {
    type: 'RedemptionCancelled',
    data: {
      transaction_id: command.transactionId,
      redemption_id: command.redemptionId,
      reward_id: redemption.rewardId,
      points_cost: redemption.pointsCost,
      balance: state.balance + redemption.pointsCost,
      lots: redemption.lots,
    },
  };
}

/**
 * Reverses all or part of a credit (CONTRACT.md §13): from its own lot first (pending or
 * available), then out of the part that expired (lifetime_expired, not the balance), the rest from
 * the balance.
 */
function reverse(command: Own<'ReverseTransaction'>, state: CustomerState): CustomerEvent {
  const id = command.reversedId;
  const lot = state.lots.get(id);
  if (!lot) {
    const line = state.otherLines.get(id);
    if (line === 'not_credit') {
      throw new ApiError(422, 'transaction_not_reversible', `Transaction '${id}' is not a credit (earn, positive adjust or event); only credits can be reversed.`);
    }
    if (line === 'empty_credit') throw reversalExceeds(id, command.amount ?? 0, 0);
    throw errors.notFound('transaction_not_found', 'credit transaction of this customer', id);
  }
  const unreversed = lot.amount - lot.reversed;
  const amount = command.amount ?? unreversed;
  if (!Number.isSafeInteger(amount) || amount <= 0) {
    if (command.amount !== undefined) throw errors.validation([{ path: 'amount', message: 'must be a positive integer' }]);
    throw reversalExceeds(id, amount, unreversed);
  }
  const plan = state.lots.planReversal(id, amount);
  if (plan === 'reversal_exceeds_credit') throw reversalExceeds(id, amount, unreversed);
  if (plan === 'insufficient_points') {
    // What the lot and its expired part cannot give must come from the other available lots.
    const fromOwn = Math.min(amount, lot.remaining + lot.expired);
    throw errors.insufficientPoints(state.balance - (lot.status === 'available' ? lot.remaining : 0), amount - fromOwn);
  }
  const fromBalance = plan.fromBalance.reduce((sum, s) => sum + s.amount, 0);
  const fromAvailableLot = lot.status === 'pending' ? 0 : plan.fromLot;
  return {
    type: 'PointsReversed',
    data: {
      transaction_id: command.transactionId,
      reversed_transaction_id: id,
      amount,
      from_lot: plan.fromLot,
      from_expired: plan.fromExpired,
      lots: plan.fromBalance,
      balance: state.balance - fromAvailableLot - fromBalance,
      description: command.description,
      reference: command.reference,
      metadata: {},
    },
  };
}

function reversalExceeds(id: string, amount: number, unreversed: number) {
  return new ApiError(
    422,
    'reversal_exceeds_credit',
    `Transaction '${id}' has ${unreversed} points that are not reversed yet; a reversal of ${amount} is more than that. Nothing was recorded.`,
    { reversible_amount: unreversed },
  );
}

/**
 * Appends a `TierUpgraded` when a credit raises the points that qualify (lifetime_earned, or in
 * `rolling` mode the window's credits) to a higher tier's threshold: straight to the highest tier
 * passed, never down (CONTRACT.md §7, §13).
 */
function withTierUpgrade(state: CustomerState, event: CustomerEvent, lifecycle: Lifecycle): CustomerEvent[] {
  const after = evolveCustomer(state, { ...event, recordedAt: lifecycle.now });
  if (after.lifetimeEarned <= state.lifetimeEarned) return [event];
  const { mode, window_days } = lifecycle.settings.tier_qualification;
  const qualifying =
    mode === 'rolling' && window_days !== null
      ? qualifyingPoints(qualifyingCredits(after), lifecycle.now.toISOString(), window_days)
      : after.lifetimeEarned;
  const reached = tierFor(lifecycle.tiers, qualifying);
  if (!reached || reached.tier_id === state.tier?.id) return [event];
  if (state.tier && reached.points_threshold <= state.tier.points_threshold) return [event];
  return [event, { type: 'TierUpgraded', data: { previous_tier: state.tier, new_tier: tierSnapshot(reached), lifetime_earned: after.lifetimeEarned } }];
}

/**
 * A credit must leave the balance, and lifetime_earned when it raises that too, safe integers
 * (CONTRACT.md §1, §3: 422 `points_out_of_range`).
 */
function assertCreditFits(state: CustomerState, credit: number, raisesLifetime = true) {
  if (state.balance + state.pending + credit > MAX_POINTS || (raisesLifetime && state.lifetimeEarned + credit > MAX_POINTS)) {
    throw errors.pointsOutOfRange(`This would take the customer's balance or lifetime_earned past ${MAX_POINTS}, the largest safe integer; nothing was recorded.`);
  }
}

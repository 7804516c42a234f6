import { ApiError, errors } from '../../errors.js';
import type { EventOf } from '../../events/catalogue.js';
import { type CustomerProfile, EMPTY_PROFILE, type TierSnapshot } from '../../events/customer-events.js';
import type { EventTypeDefinition, TierDefinition } from '../../events/program-events.js';
import type { RewardDefinition } from '../../events/reward-events.js';
import { changedFields } from '../changed-fields.js';
import type { Decider } from '../decider.js';
import { applyMultiplier, eventPoints, MAX_EVENT_POINTS } from '../program/rules.js';

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
>;

export type PointsType = 'earn' | 'deduct' | 'adjust';

/** The business's tiers as they are now: for the multiplier of the held tier and for upgrades. */
type Tiers = readonly TierDefinition[];

export type CustomerCommand =
  | { type: 'RegisterCustomer'; customerId: string; businessId: string; profile: CustomerProfile }
  | { type: 'UpdateCustomer'; changes: Partial<CustomerProfile> }
  | {
      type: 'RecordPoints';
      pointsType: PointsType;
      transactionId: string;
      amount: number;
      applyMultiplier: boolean;
      description: string | null;
      reference: string | null;
      metadata: Record<string, unknown>;
      tiers: Tiers;
    }
  | {
      type: 'RecordEvent';
      eventId: string;
      eventType: EventTypeDefinition;
      properties: Record<string, unknown>;
      reference: string | null;
      tiers: Tiers;
    }
  | {
      type: 'RedeemReward';
      redemptionId: string;
      reward: RewardDefinition;
      reference: string | null;
      metadata: Record<string, unknown>;
    }
  | { type: 'CancelRedemption'; redemptionId: string; transactionId: string };

export interface Redemption {
  rewardId: string;
  rewardType: string;
  pointsCost: number;
  cancelled: boolean;
}

export interface CustomerState {
  registered: boolean;
  id: string | null;
  businessId: string | null;
  profile: CustomerProfile;
  balance: number;
  lifetimeEarned: number;
  lifetimeRedeemed: number;
  /** The tier held now (as reached); its current multiplier applies to the next earn. */
  tier: TierSnapshot | null;
  redemptions: Record<string, Redemption>;
}

export const MAX_POINTS = Number.MAX_SAFE_INTEGER;

export const customerDecider: Decider<CustomerCommand, CustomerState, CustomerEvent> = {
  initialState: () => ({
    registered: false,
    id: null,
    businessId: null,
    profile: EMPTY_PROFILE,
    balance: 0,
    lifetimeEarned: 0,
    lifetimeRedeemed: 0,
    tier: null,
    redemptions: {},
  }),

  evolve(state, event) {
    switch (event.type) {
      case 'CustomerRegistered': {
        const { customer_id, business_id, ...profile } = event.data;
        return { ...state, registered: true, id: customer_id, businessId: business_id, profile };
      }
      case 'CustomerUpdated':
        return { ...state, profile: { ...state.profile, ...definedOnly(event.data) } };
      case 'PointsEarned':
      case 'PointsAdjusted':
        return { ...state, balance: event.data.balance, lifetimeEarned: state.lifetimeEarned + event.data.amount };
      case 'PointsDeducted':
        return { ...state, balance: event.data.balance, lifetimeRedeemed: state.lifetimeRedeemed + event.data.amount };
      case 'EventRecorded':
        return { ...state, balance: event.data.balance, lifetimeEarned: state.lifetimeEarned + event.data.points_awarded };
      case 'TierUpgraded':
        return { ...state, tier: event.data.new_tier };
      case 'RewardRedeemed': {
        const { redemption_id, reward_id, reward_type, points_cost, balance } = event.data;
        return {
          ...state,
          balance,
          lifetimeRedeemed: state.lifetimeRedeemed + points_cost,
          redemptions: {
            ...state.redemptions,
            [redemption_id]: { rewardId: reward_id, rewardType: reward_type, pointsCost: points_cost, cancelled: false },
          },
        };
      }
      case 'RedemptionCancelled': {
        const redemption = state.redemptions[event.data.redemption_id]!;
        return {
          ...state,
          balance: event.data.balance,
          lifetimeRedeemed: state.lifetimeRedeemed - event.data.points_cost,
          redemptions: { ...state.redemptions, [event.data.redemption_id]: { ...redemption, cancelled: true } },
        };
      }
      default: {
        const exhaustive: never = event;
        return exhaustive;
      }
    }
  },

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
    switch (command.type) {
      case 'UpdateCustomer': {
        const changed = changedFields(state.profile, command.changes);
        const after = { ...state.profile, ...changed };
        if (after.email === null && after.phone === null) {
          throw errors.validation([{ path: 'email', message: 'a customer must keep an email or a phone' }]);
        }
        return Object.keys(changed).length === 0 ? [] : [{ type: 'CustomerUpdated', data: changed }];
      }
      case 'RecordPoints':
        return withTierUpgrade(state, recordPoints(command, state), command.tiers);
      case 'RecordEvent':
        return withTierUpgrade(state, recordEvent(command, state), command.tiers);
      case 'RedeemReward':
        return [redeem(command, state)];
      case 'CancelRedemption': {
        const redemption = state.redemptions[command.redemptionId];
        if (!redemption) throw errors.redemptionNotFound(command.redemptionId);
        if (redemption.cancelled) {
          throw new ApiError(409, 'redemption_already_cancelled', `Redemption '${command.redemptionId}' is already cancelled.`);
        }
        assertCreditFits(state, redemption.pointsCost, false);
        return [
          {
            type: 'RedemptionCancelled',
            data: {
              transaction_id: command.transactionId,
              redemption_id: command.redemptionId,
              reward_id: redemption.rewardId,
              points_cost: redemption.pointsCost,
              balance: state.balance + redemption.pointsCost,
            },
          },
        ];
      }
      default: {
        const exhaustive: never = command;
        return exhaustive;
      }
    }
  },
};

/** The multiplier of the tier held before this command, as the tier is defined now. */
function heldMultiplier(state: CustomerState, tiers: Tiers): number {
  if (!state.tier) return 1;
  return tiers.find((t) => t.tier_id === state.tier!.id)?.multiplier ?? state.tier.multiplier;
}

function recordPoints(command: Extract<CustomerCommand, { type: 'RecordPoints' }>, state: CustomerState): CustomerEvent {
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
  switch (pointsType) {
    case 'earn': {
      const multiplier = command.applyMultiplier ? heldMultiplier(state, command.tiers) : 1;
      const credited = applyMultiplier(amount, multiplier);
      if (credited > MAX_EVENT_POINTS) {
        throw errors.pointsOutOfRange(
          `With the tier multiplier ${multiplier} this earn would credit ${credited.toLocaleString('en-US')} points, more than the ${MAX_EVENT_POINTS.toLocaleString('en-US')} one amount may be; nothing was recorded.`,
        );
      }
      assertCreditFits(state, credited);
      return {
        type: 'PointsEarned',
        data: { ...base, amount: credited, base_amount: amount, multiplier, balance: state.balance + credited },
      };
    }
    case 'deduct':
      if (amount > state.balance) throw errors.insufficientPoints(state.balance, amount);
      return { type: 'PointsDeducted', data: { ...base, amount, balance: state.balance - amount } };
    case 'adjust':
      if (state.balance + amount < 0) throw errors.insufficientPoints(state.balance, -amount);
      assertCreditFits(state, amount);
      return { type: 'PointsAdjusted', data: { ...base, amount, balance: state.balance + amount } };
  }
}

function recordEvent(command: Extract<CustomerCommand, { type: 'RecordEvent' }>, state: CustomerState): CustomerEvent {
  const multiplier = heldMultiplier(state, command.tiers);
  const { base, awarded } = eventPoints(command.eventType, command.properties, multiplier);
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
      balance: state.balance + awarded,
    },
  };
}

function redeem(command: Extract<CustomerCommand, { type: 'RedeemReward' }>, state: CustomerState): CustomerEvent {
  const { reward } = command;
  if (!reward.active) throw new ApiError(422, 'reward_inactive', `Reward '${reward.reward_id}' is not active.`);
  if (
    reward.reward_type === 'achievement' &&
    Object.values(state.redemptions).some((r) => r.rewardId === reward.reward_id && !r.cancelled)
  ) {
    throw new ApiError(409, 'achievement_already_granted', `Achievement '${reward.reward_id}' was already granted to this customer.`);
  }
  if (reward.points_cost > state.balance) throw errors.insufficientPoints(state.balance, reward.points_cost);
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
    },
  };
}

/**
 * Appends a `TierUpgraded` when the events raise lifetime_earned to a higher tier's threshold:
 * straight to the highest tier passed, never down (CONTRACT.md §7).
 */
function withTierUpgrade(state: CustomerState, event: CustomerEvent, tiers: Tiers): CustomerEvent[] {
  const after = customerDecider.evolve(state, event);
  if (after.lifetimeEarned <= state.lifetimeEarned) return [event];
  const reached = [...tiers]
    .filter((t) => t.points_threshold <= after.lifetimeEarned)
    .sort((a, b) => b.points_threshold - a.points_threshold)[0];
  if (!reached || reached.tier_id === state.tier?.id) return [event];
  if (state.tier && reached.points_threshold <= state.tier.points_threshold) return [event];
  return [
    event,
    {
      type: 'TierUpgraded',
      data: {
        previous_tier: state.tier,
        new_tier: {
          id: reached.tier_id,
          name: reached.name,
          points_threshold: reached.points_threshold,
          multiplier: reached.multiplier,
          benefits: reached.benefits,
        },
        lifetime_earned: after.lifetimeEarned,
      },
    },
  ];
}

/**
 * A credit must leave the balance, and lifetime_earned when it raises that too, safe integers
 * (CONTRACT.md §1, §3: 422 `points_out_of_range`).
 */
function assertCreditFits(state: CustomerState, credit: number, raisesLifetime = true) {
  if (state.balance + credit > MAX_POINTS || (raisesLifetime && state.lifetimeEarned + credit > MAX_POINTS)) {
    throw errors.pointsOutOfRange(`This would take the customer's balance or lifetime_earned past ${MAX_POINTS}, the largest safe integer; nothing was recorded.`);
  }
}

function definedOnly<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}

import { ApiError, errors } from '../../errors.js';
import type { EventOf } from '../../events/catalogue.js';
import type { CustomerProfile } from '../../events/customer-events.js';
import type { Decider } from '../decider.js';

export type CustomerEvent = EventOf<
  'CustomerRegistered' | 'CustomerUpdated' | 'PointsEarned' | 'PointsDeducted' | 'PointsAdjusted'
>;

export type PointsType = 'earn' | 'deduct' | 'adjust';

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
    };

export interface CustomerState {
  registered: boolean;
  id: string | null;
  businessId: string | null;
  profile: CustomerProfile;
  balance: number;
  lifetimeEarned: number;
  lifetimeRedeemed: number;
  /** The tier held now; its multiplier applies to the next earn. */
  tier: { id: string; multiplier: number } | null;
}

const EMPTY_PROFILE: CustomerProfile = {
  email: null,
  phone: null,
  first_name: null,
  last_name: null,
  external_reference: null,
  metadata: {},
};

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
        return {
          ...state,
          balance: event.data.balance,
          lifetimeRedeemed: state.lifetimeRedeemed + event.data.amount,
        };
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
        const changed = Object.fromEntries(
          Object.entries(definedOnly(command.changes)).filter(
            ([field, value]) => canonical(state.profile[field as keyof CustomerProfile]) !== canonical(value),
          ),
        );
        return Object.keys(changed).length === 0 ? [] : [{ type: 'CustomerUpdated', data: changed }];
      }
      case 'RecordPoints':
        return [recordPoints(command, state)];
      default: {
        const exhaustive: never = command;
        return exhaustive;
      }
    }
  },
};

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
      const multiplier = command.applyMultiplier ? (state.tier?.multiplier ?? 1) : 1;
      // Multipliers have at most two decimals: multiply in integer hundredths so 100 × 1.15 is 115, not 114.
      const credited = Math.floor((amount * Math.round(multiplier * 100)) / 100);
      assertWithinLimit(state.lifetimeEarned + credited);
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
      assertWithinLimit(state.lifetimeEarned + amount);
      return { type: 'PointsAdjusted', data: { ...base, amount, balance: state.balance + amount } };
  }
}

function assertWithinLimit(total: number) {
  if (total > MAX_POINTS) {
    throw new ApiError(400, 'validation_error', 'The lifetime total would exceed the largest safe integer.', {
      details: [{ path: 'amount', message: 'too large for this customer' }],
    });
  }
}

function definedOnly<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/** JSON with object keys sorted, so equal values compare equal whatever their key order (jsonb reorders keys). */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v !== null && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  );
}

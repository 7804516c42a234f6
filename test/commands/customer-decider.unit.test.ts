import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type CustomerCommand,
  customerDecider,
  type CustomerEvent,
  type CustomerState,
  MAX_POINTS,
  type PointsType,
} from '../../src/commands/customer/customer-decider.js';
import { List } from 'immutable';
import { IdMap } from '../../src/commands/customer/id-map.js';
import { LotLedger } from '../../src/commands/customer/lot-ledger.js';
import { fold } from '../../src/commands/decider.js';
import { deciderSpec, expectApiError } from '../support/decider-spec.js';
import type { CustomerProfile } from '../../src/events/customer-events.js';

const { given, givenState } = deciderSpec(customerDecider);

const profile = (overrides: Partial<CustomerProfile> = {}): CustomerProfile => ({
  email: 'ann@example.com',
  phone: null,
  first_name: 'Ann',
  last_name: null,
  external_reference: null,
  metadata: {},
  ...overrides,
});

const registered = (overrides: Partial<CustomerProfile> = {}): CustomerEvent => ({
  type: 'CustomerRegistered',
  data: { customer_id: 'cust_1', business_id: 'biz_1', ...profile(overrides) },
});

const points = (
  pointsType: PointsType,
  amount: number,
  options: { applyMultiplier?: boolean; transactionId?: string } = {},
): CustomerCommand => ({
  type: 'RecordPoints',
  pointsType,
  transactionId: options.transactionId ?? 'txn_1',
  amount,
  applyMultiplier: options.applyMultiplier ?? false,
  description: 'a note',
  reference: 'ref-1',
  metadata: { source: 'test' },
  tiers: [],
});

const movement = { transaction_id: 'txn_1', description: 'a note', reference: 'ref-1', metadata: { source: 'test' } };
/** A credit's lot times under the default policy: spendable at once, never expiring. */
const noLotTimes = { available_at: null, expires_at: null };

const earned = (amount: number, balance: number): CustomerEvent => ({
  type: 'PointsEarned',
  data: { ...movement, amount, base_amount: amount, multiplier: 1, balance, ...noLotTimes },
});
const deducted = (amount: number, balance: number): CustomerEvent => ({
  type: 'PointsDeducted',
  // All from the one lot these tests make (txn_1).
  data: { ...movement, amount, balance, lots: [{ transaction_id: 'txn_1', amount }] },
});
const adjusted = (amount: number, balance: number): CustomerEvent => ({
  type: 'PointsAdjusted',
  data: { ...movement, amount, balance, ...noLotTimes, ...(amount < 0 ? { lots: [{ transaction_id: 'txn_1', amount: -amount }] } : {}) },
});

const withTier = (state: CustomerState, multiplier: number): CustomerState => ({
  ...state,
  tier: { id: 'tier_gold', name: 'Gold', points_threshold: 0, multiplier, benefits: [] },
});

describe('customer decider: registration', () => {
  it('registers a new customer with its profile', () => {
    given()
      .when({ type: 'RegisterCustomer', customerId: 'cust_1', businessId: 'biz_1', profile: profile() })
      .then([registered()]);
  });

  it('folds a registration into a registered customer with a zero balance', () => {
    expect(fold(customerDecider, [registered({ phone: '+100' })])).toEqual({
      registered: true,
      id: 'cust_1',
      businessId: 'biz_1',
      profile: profile({ phone: '+100' }),
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
    });
  });

  it('refuses to register the same customer twice with a conflict', () => {
    given(registered())
      .when({ type: 'RegisterCustomer', customerId: 'cust_1', businessId: 'biz_1', profile: profile() })
      .thenThrows('conflict', 409);
  });
});

describe('customer decider: profile updates', () => {
  it('emits only the fields that changed', () => {
    given(registered())
      .when({ type: 'UpdateCustomer', changes: { email: 'ann@example.com', first_name: 'Anna', last_name: 'Lee' } })
      .then([{ type: 'CustomerUpdated', data: { first_name: 'Anna', last_name: 'Lee' } }]);
  });

  it('emits nothing when nothing changes', () => {
    given(registered({ metadata: { plan: 'gold' } }))
      .when({ type: 'UpdateCustomer', changes: { email: 'ann@example.com', first_name: 'Ann', metadata: { plan: 'gold' } } })
      .then([]);
  });

  it('emits nothing for an empty change or fields left undefined', () => {
    given(registered()).when({ type: 'UpdateCustomer', changes: {} }).then([]);
    given(registered()).when({ type: 'UpdateCustomer', changes: { email: undefined, phone: undefined } }).then([]);
  });

  it('clears a field set to null', () => {
    given(registered({ phone: '+100' }))
      .when({ type: 'UpdateCustomer', changes: { phone: null } })
      .then([{ type: 'CustomerUpdated', data: { phone: null } }]);
  });

  it('replaces metadata rather than merging it', () => {
    const update: CustomerEvent = { type: 'CustomerUpdated', data: { metadata: { b: 2 } } };
    given(registered({ metadata: { a: 1 } }))
      .when({ type: 'UpdateCustomer', changes: { metadata: { b: 2 } } })
      .then([update]);
    expect(fold(customerDecider, [registered({ metadata: { a: 1 } }), update]).profile.metadata).toEqual({ b: 2 });
  });

  it('folds an update onto the profile, keeping the untouched fields', () => {
    const state = fold(customerDecider, [registered(), { type: 'CustomerUpdated', data: { last_name: 'Lee' } }]);
    expect(state.profile).toEqual(profile({ last_name: 'Lee' }));
  });

  // PostgreSQL jsonb reorders object keys, so the stored metadata rarely keeps the client's key order.
  it('treats the same metadata with its keys in another order as no change', () => {
    given(registered({ metadata: { a: 1, zeta: { x: 1, y: 2 } } }))
      .when({ type: 'UpdateCustomer', changes: { metadata: { zeta: { y: 2, x: 1 }, a: 1 } } })
      .then([]);
  });
});

describe('customer decider: commands on an unregistered customer', () => {
  it('answers customer_not_found to an update', () => {
    given().when({ type: 'UpdateCustomer', changes: { first_name: 'Bo' } }).thenThrows('customer_not_found', 404);
  });

  it.each(['earn', 'deduct', 'adjust'] as const)('answers customer_not_found when recording points (%s)', (pointsType) => {
    given().when(points(pointsType, 10)).thenThrows('customer_not_found', 404);
  });
});

describe('customer decider: earn, deduct, adjust (CONTRACT §5)', () => {
  it('earns points, the event carrying the balance after it', () => {
    given(registered()).when(points('earn', 100)).then([earned(100, 100)]);
    given(registered(), earned(40, 40)).when(points('earn', 2)).then([earned(2, 42)]);
  });

  it('deducts points within the balance, down to exactly zero', () => {
    given(registered(), earned(100, 100)).when(points('deduct', 30)).then([deducted(30, 70)]);
    given(registered(), earned(100, 100)).when(points('deduct', 100)).then([deducted(100, 0)]);
  });

  it('adjusts in both directions', () => {
    given(registered(), earned(100, 100)).when(points('adjust', 25)).then([adjusted(25, 125)]);
    given(registered(), earned(100, 100)).when(points('adjust', -100)).then([adjusted(-100, 0)]);
    given(registered()).when(points('adjust', 7)).then([adjusted(7, 7)]);
  });

  it('folds points events into balance and lifetime totals', () => {
    const state = fold(customerDecider, [
      registered(),
      earned(100, 100),
      deducted(30, 70),
      adjusted(-20, 50),
      adjusted(5, 55),
    ]);
    expect(state).toMatchObject({ balance: 55, lifetimeEarned: 85, lifetimeRedeemed: 30 });
  });

  it.each([
    ['earn', 0],
    ['earn', -5],
    ['earn', 1.5],
    ['earn', Number.NaN],
    ['deduct', 0],
    ['deduct', -5],
    ['deduct', 2.5],
    ['adjust', 0],
    ['adjust', 0.5],
    ['adjust', Number.POSITIVE_INFINITY],
  ] as const)('refuses %s with amount %s as a validation_error on amount', (pointsType, amount) => {
    const error = given(registered(), earned(100, 100)).when(points(pointsType, amount)).thenThrows('validation_error', 400);
    expect(error.extras.details).toEqual([expect.objectContaining({ path: 'amount' })]);
  });

  it('refuses a deduct beyond the balance with insufficient_points, reporting the balance', () => {
    const error = given(registered(), earned(50, 50)).when(points('deduct', 51)).thenThrows('insufficient_points', 422);
    expect(error.extras).toMatchObject({ balance: 50 });
    given(registered()).when(points('deduct', 1)).thenThrows('insufficient_points', 422);
  });

  it('refuses a negative adjust that would take the balance below zero', () => {
    given(registered(), earned(50, 50)).when(points('adjust', -51)).thenThrows('insufficient_points', 422);
    given(registered()).when(points('adjust', -1)).thenThrows('insufficient_points', 422);
  });

  it('refuses an earn that would take lifetime_earned past the largest safe integer, as a 422 points_out_of_range', () => {
    const state: CustomerState = { ...fold(customerDecider, [registered()]), balance: MAX_POINTS - 5, lifetimeEarned: MAX_POINTS - 5 };
    givenState(state).when(points('earn', 5)).then([earned(5, MAX_POINTS)]);
    givenState(state).when(points('earn', 6)).thenThrows('points_out_of_range', 422);
    givenState(state).when(points('adjust', 6)).thenThrows('points_out_of_range', 422);
  });

  it('refuses an earn whose tier multiplier would credit more than 1,000,000,000 points (the most one amount may be)', () => {
    const gold = withTier(fold(customerDecider, [registered()]), 2);
    givenState(gold).when(points('earn', 500_000_000, { applyMultiplier: true })).then([
      { type: 'PointsEarned', data: { ...movement, amount: 1_000_000_000, base_amount: 500_000_000, multiplier: 2, balance: 1_000_000_000, ...noLotTimes } },
    ]);
    givenState(gold).when(points('earn', 500_000_001, { applyMultiplier: true })).thenThrows('points_out_of_range', 422);
    givenState(gold).when(points('earn', 1_000_000_000)).then([earned(1_000_000_000, 1_000_000_000)]);
  });
});

describe('customer decider: events and the amount limit (CONTRACT §1, §3, §8)', () => {
  const base = () => fold(customerDecider, [registered()]);
  const perUnit = (points_per_unit: number, default_points = 0) => ({
    event_type_id: 'evtp_1',
    name: 'purchase',
    display_name: 'Purchase',
    default_points,
    rules: [{ points_per_unit, unit_property: 'n' }],
    metadata: {},
  });
  const recordEvent = (eventType: ReturnType<typeof perUnit>, n: number): CustomerCommand => ({
    type: 'RecordEvent',
    eventId: 'evt_1',
    eventType,
    properties: { n },
    reference: null,
    tiers: [],
  });
  const recorded = (base_points: number, multiplier: number, points_awarded: number, balance: number, n = 1000): CustomerEvent => ({
    type: 'EventRecorded',
    data: { event_id: 'evt_1', event_type: 'purchase', properties: { n }, reference: null, base_points, multiplier, points_awarded, balance, ...noLotTimes },
  });

  it('records an event worth exactly 1,000,000,000 points after the multiplier', () => {
    givenState(base()).when(recordEvent(perUnit(1_000_000), 1000)).then([recorded(1_000_000_000, 1, 1_000_000_000, 1_000_000_000)]);
    givenState(withTier(base(), 2)).when(recordEvent(perUnit(500_000), 1000)).then([recorded(500_000_000, 2, 1_000_000_000, 1_000_000_000)]);
  });

  it('refuses an event whose rules award more than 1,000,000,000 points with 422 points_out_of_range', () => {
    // The case: 1,000,000 per unit × 10,000 units = 10,000,000,000 (15,000,000,000 under a 1.5 tier).
    const error = givenState(withTier(base(), 1.5)).when(recordEvent(perUnit(1_000_000), 10_000)).thenThrows('points_out_of_range', 422);
    expect(error.message).toContain('1,000,000,000');
    givenState(base()).when(recordEvent(perUnit(1_000_000, 1), 1000)).thenThrows('points_out_of_range', 422);
    // Within the limit before the multiplier, beyond it after.
    givenState(withTier(base(), 1.01)).when(recordEvent(perUnit(1_000_000), 1000)).thenThrows('points_out_of_range', 422);
  });

  it('refuses units so large the points are no finite number, rather than recording them', () => {
    givenState(base()).when(recordEvent(perUnit(1_000_000), Number.MAX_VALUE)).thenThrows('points_out_of_range', 422);
  });

  it('refuses an event that would take the balance or lifetime_earned past the largest safe integer', () => {
    const nearTop: CustomerState = { ...base(), balance: MAX_POINTS - 999, lifetimeEarned: MAX_POINTS - 999 };
    givenState(nearTop).when(recordEvent(perUnit(1), 999)).then([recorded(999, 1, 999, MAX_POINTS, 999)]);
    givenState(nearTop).when(recordEvent(perUnit(1), 1000)).thenThrows('points_out_of_range', 422);
  });

  it('refuses a cancellation whose points would take the balance past the largest safe integer', () => {
    const redeemed: CustomerState = {
      ...base(),
      balance: MAX_POINTS - 10,
      lifetimeEarned: MAX_POINTS,
      lifetimeRedeemed: 10,
      redemptions: IdMap.fromJSON({
        red_1: { rewardId: 'rew_1', rewardType: 'digital', pointsCost: 10, cancelled: false, lots: [] },
        red_2: { rewardId: 'rew_1', rewardType: 'digital', pointsCost: 11, cancelled: false, lots: [] },
      }),
    };
    givenState(redeemed)
      .when({ type: 'CancelRedemption', redemptionId: 'red_1', transactionId: 'txn_9' })
      .then([{ type: 'RedemptionCancelled', data: { transaction_id: 'txn_9', redemption_id: 'red_1', reward_id: 'rew_1', points_cost: 10, balance: MAX_POINTS, lots: [] } }]);
    givenState(redeemed).when({ type: 'CancelRedemption', redemptionId: 'red_2', transactionId: 'txn_9' }).thenThrows('points_out_of_range', 422);
  });
});

describe('customer decider: tier multiplier on earn', () => {
  const base = () => fold(customerDecider, [registered()]);

  it('multiplies by the tier multiplier, rounding down, and records base_amount and multiplier', () => {
    givenState(withTier(base(), 1.5))
      .when(points('earn', 7, { applyMultiplier: true }))
      .then([{ type: 'PointsEarned', data: { ...movement, amount: 10, base_amount: 7, multiplier: 1.5, balance: 10, ...noLotTimes } }]);
  });

  it('uses multiplier 1 when the customer has no tier', () => {
    givenState(base()).when(points('earn', 7, { applyMultiplier: true })).then([earned(7, 7)]);
  });

  it('ignores the tier when apply_multiplier is false', () => {
    givenState(withTier(base(), 3)).when(points('earn', 7)).then([earned(7, 7)]);
  });

  it('rounds down the exact product for a two-decimal multiplier (100 × 1.15 = 115)', () => {
    givenState(withTier(base(), 1.15))
      .when(points('earn', 100, { applyMultiplier: true }))
      .then([{ type: 'PointsEarned', data: { ...movement, amount: 115, base_amount: 100, multiplier: 1.15, balance: 115, ...noLotTimes } }]);
  });

  it('credits floor(amount × multiplier) exactly for every multiplier of 1.00 to 10.00 in hundredths, refusing a credit past 1,000,000,000', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 1_000_000_000 }), fc.integer({ min: 100, max: 1000 }), (amount, hundredths) => {
        const multiplier = hundredths / 100;
        const command = points('earn', amount, { applyMultiplier: true });
        // Integer arithmetic: amount × hundredths is exact well below 2^53.
        const credited = Math.floor((amount * hundredths) / 100);
        if (credited > 1_000_000_000) {
          givenState(withTier(base(), multiplier)).when(command).thenThrows('points_out_of_range', 422);
          return;
        }
        const [event] = customerDecider.decide(command, withTier(base(), multiplier));
        expect(event?.data).toMatchObject({ amount: credited, base_amount: amount, multiplier });
      }),
      { numRuns: 500, examples: [[100, 115], [3, 115], [7, 110]] },
    );
  });
});

// A model of CONTRACT §5: what a command should do to a balance, or why it must be refused.
type Step = { pointsType: PointsType; amount: number; applyMultiplier: boolean };

function expectedOutcome(step: Step, state: CustomerState): { refused: string } | { delta: number; amount: number } {
  const { pointsType, amount } = step;
  if (!Number.isSafeInteger(amount) || amount === 0 || (pointsType !== 'adjust' && amount < 0)) return { refused: 'validation_error' };
  if (pointsType === 'earn') {
    const credited = Math.floor(amount * (step.applyMultiplier ? (state.tier?.multiplier ?? 1) : 1));
    return credited > 1_000_000_000 ? { refused: 'points_out_of_range' } : { delta: credited, amount: credited };
  }
  if (pointsType === 'deduct') return amount > state.balance ? { refused: 'insufficient_points' } : { delta: -amount, amount };
  return state.balance + amount < 0 ? { refused: 'insufficient_points' } : { delta: amount, amount };
}

function movementOf(event: CustomerEvent): { amount: number; balance: number } {
  if (event.type === 'PointsEarned' || event.type === 'PointsDeducted' || event.type === 'PointsAdjusted') return event.data;
  throw new Error(`${event.type} is not a points event`);
}

const stepArb: fc.Arbitrary<Step> = fc.record({
  pointsType: fc.constantFrom<PointsType>('earn', 'deduct', 'adjust'),
  amount: fc.oneof(
    { weight: 8, arbitrary: fc.integer({ min: -1500, max: 1500 }) },
    { weight: 1, arbitrary: fc.constant(0) },
    { weight: 1, arbitrary: fc.constantFrom(0.5, -2.25, Number.NaN, 1e20) },
  ),
  applyMultiplier: fc.boolean(),
});

// Multipliers in quarters are exact in binary floating point, so the model's product is exact too.
const tierArb = fc.option(fc.integer({ min: 4, max: 40 }).map((quarters) => quarters / 4), { nil: null });

describe('customer decider: ledger properties over arbitrary command sequences', () => {
  it('keeps balance = lifetime_earned − lifetime_redeemed ≥ 0, refuses without effect, and replays to the same state', () => {
    fc.assert(
      fc.property(tierArb, fc.array(stepArb, { maxLength: 60 }), (multiplier, steps) => {
        const start = fold(customerDecider, [registered()]);
        let state: CustomerState = multiplier === null ? start : withTier(start, multiplier);
        const produced: CustomerEvent[] = [];

        steps.forEach((step, index) => {
          const command = points(step.pointsType, step.amount, { applyMultiplier: step.applyMultiplier, transactionId: `txn_${index}` });
          const before = structuredClone(state);
          const outcome = expectedOutcome(step, state);
          if ('refused' in outcome) {
            expectApiError(() => customerDecider.decide(command, state), outcome.refused, outcome.refused === 'validation_error' ? 400 : 422);
            expect(state).toEqual(before);
            return;
          }
          const events = customerDecider.decide(command, state);
          expect(events).toHaveLength(1);
          const [event] = events as [CustomerEvent];
          expect(event.type).toBe({ earn: 'PointsEarned', deduct: 'PointsDeducted', adjust: 'PointsAdjusted' }[step.pointsType]);
          expect(event.data).toMatchObject({ transaction_id: `txn_${index}`, amount: outcome.amount, balance: before.balance + outcome.delta });
          state = customerDecider.evolve(state, event);
          produced.push(event);

          expect(state.balance).toBe(before.balance + outcome.delta);
          expect(state.balance).toBe(state.lifetimeEarned - state.lifetimeRedeemed);
          expect(state.balance).toBeGreaterThanOrEqual(0);
        });

        // Replay: the tier is not (yet) derived from events, so it is carried over by hand.
        const replayed = fold(customerDecider, [registered(), ...produced]);
        expect({ ...replayed, tier: state.tier }).toEqual(state);

        // The events alone account for what the state says.
        const sum = (types: CustomerEvent['type'][]) =>
          produced.reduce((total, e) => total + (types.includes(e.type) ? movementOf(e).amount : 0), 0);
        expect(sum(['PointsEarned', 'PointsAdjusted'])).toBe(state.lifetimeEarned);
        expect(sum(['PointsDeducted'])).toBe(state.lifetimeRedeemed);
        expect(sum(['PointsEarned', 'PointsAdjusted']) - sum(['PointsDeducted'])).toBe(state.balance);
        const last = produced.at(-1);
        expect(last ? movementOf(last).balance : 0).toBe(state.balance);
      }),
      { numRuns: 300 },
    );
  });
});

describe('customer decider: a state from its snapshot', () => {
  it('comes back from its JSON with its lots, other ledger lines and redemptions, and decides as before', () => {
    const state = fold(customerDecider, [
      registered(),
      earned(100, 100),
      { type: 'PointsDeducted', data: { ...movement, transaction_id: 'txn_2', amount: 10, balance: 90, lots: [{ transaction_id: 'txn_1', amount: 10 }] } },
      {
        type: 'RewardRedeemed',
        data: { redemption_id: 'red_1', reward_id: 'rew_1', reward_title: 'Coffee', reward_type: 'physical', points_cost: 30, reference: null, metadata: {}, balance: 60, lots: [{ transaction_id: 'txn_1', amount: 30 }] },
      },
      { type: 'PointsAdjusted', data: { ...movement, transaction_id: 'txn_4', amount: -5, balance: 55, ...noLotTimes, lots: [{ transaction_id: 'txn_1', amount: 5 }] } },
    ]);
    const revived = customerDecider.revive!(JSON.parse(JSON.stringify(state)));
    expect(revived).toMatchObject({ balance: 55, lifetimeEarned: 95, lifetimeRedeemed: 40 });
    expect(revived.negativeCredits.toArray()).toEqual([{ at: expect.any(String), amount: -5 }]);
    expect(revived.negativeCredits.toArray()).toEqual(state.negativeCredits.toArray());
    expect(revived.lots.values()).toEqual(state.lots.values());
    expect(revived.otherLines.toJSON()).toEqual({ txn_2: 'not_credit', red_1: 'not_credit', txn_4: 'not_credit' });
    expect(revived.redemptions.get('red_1')).toEqual(state.redemptions.get('red_1'));
    // A debit is still known as one (422, not 404), and the redemption can still be cancelled, into the lot it took from.
    const reverse = { type: 'ReverseTransaction' as const, transactionId: 'txn_9', description: null, reference: null };
    givenState(revived).when({ ...reverse, reversedId: 'txn_2' }).thenThrows('transaction_not_reversible', 422);
    givenState(revived).when({ ...reverse, reversedId: 'txn_404' }).thenThrows('transaction_not_found', 404);
    const cancel = { type: 'CancelRedemption' as const, redemptionId: 'red_1', transactionId: 'txn_3' };
    expect(customerDecider.decide(cancel, revived)).toEqual(customerDecider.decide(cancel, state));
  });
});


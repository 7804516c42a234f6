import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type CustomerCommand, customerDecider, type CustomerEvent, type CustomerState } from '../../src/commands/customer/customer-decider.js';
import type { Lifecycle } from '../../src/commands/customer/customer-state.js';
import { decideDue, nextDueAt } from '../../src/commands/customer/due-work.js';
import { pending, spendable } from '../../src/events/lots.js';
import { fold } from '../../src/commands/decider.js';
import { ApiError } from '../../src/errors.js';
import { DEFAULT_PROGRAM_SETTINGS, type ProgramSettings, type TierDefinition } from '../../src/events/program-events.js';

/**
 * Decider properties of the points lifecycle (CONTRACT.md §13): for any sequence of credits
 * (pending or not, expiring or not), debits, redemptions and their cancellations, reversals and
 * time passing (releases, notices, expiries, rolling downgrades as due work), the invariant holds
 * after every command, no lot's remaining goes below 0, a refused command decides nothing, and a
 * replay of the events gives the same state.
 */
const DAY = 86_400_000;
const T0 = Date.parse('2030-01-01T00:00:00.000Z');

const tiers: TierDefinition[] = [
  { tier_id: 'tier_s', name: 'Silver', points_threshold: 100, multiplier: 1.5, benefits: [], metadata: {} },
  { tier_id: 'tier_g', name: 'Gold', points_threshold: 300, multiplier: 2, benefits: [], metadata: {} },
];

type Op =
  | { kind: 'earn' | 'adjust'; amount: number; availableIn: number | null; expiresIn: number | null | undefined }
  | { kind: 'deduct' | 'redeem'; amount: number }
  | { kind: 'cancel'; pick: number }
  | { kind: 'reverse'; pick: number; amount: number | undefined }
  | { kind: 'wait'; hours: number };

const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({
    kind: fc.constantFrom('earn' as const, 'adjust' as const),
    amount: fc.integer({ min: -80, max: 200 }),
    availableIn: fc.option(fc.integer({ min: 1, max: 10 * 24 }), { nil: null }),
    expiresIn: fc.option(fc.option(fc.integer({ min: 1, max: 30 * 24 }), { nil: null }), { nil: undefined }),
  }),
  fc.record({ kind: fc.constantFrom('deduct' as const, 'redeem' as const), amount: fc.integer({ min: 1, max: 150 }) }),
  fc.record({ kind: fc.constant('cancel' as const), pick: fc.nat() }),
  fc.record({ kind: fc.constant('reverse' as const), pick: fc.nat(), amount: fc.option(fc.integer({ min: 1, max: 120 }), { nil: undefined }) }),
  fc.record({ kind: fc.constant('wait' as const), hours: fc.integer({ min: 1, max: 20 * 24 }) }),
);

const settingsArb: fc.Arbitrary<ProgramSettings> = fc.record({
  points_expiry_days: fc.option(fc.integer({ min: 1, max: 20 }), { nil: null }),
  pending_days: fc.integer({ min: 0, max: 3 }),
  expiring_notice_days: fc.integer({ min: 1, max: 7 }),
  tier_qualification: fc.oneof(
    fc.constant({ mode: 'lifetime' as const, window_days: null }),
    fc.record({ mode: fc.constant('rolling' as const), window_days: fc.integer({ min: 1, max: 30 }) }),
  ),
});

const iso = (ms: number) => new Date(ms).toISOString();

const registered: CustomerEvent = {
  type: 'CustomerRegistered',
  data: { customer_id: 'cust_p', business_id: 'biz_p', email: 'p@example.com', phone: null, first_name: null, last_name: null, external_reference: null, metadata: {} },
};

function checkInvariant(state: CustomerState, now: Date) {
  expect(state.balance).toBe(state.lifetimeEarned - state.lifetimeRedeemed - state.lifetimeExpired - state.pending);
  expect(state.balance).toBeGreaterThanOrEqual(0);
  expect(state.balance).toBe(spendable(state.lots.values()));
  expect(state.pending).toBe(pending(state.lots.values()));
  for (const lot of state.lots.values()) {
    expect(lot.remaining).toBeGreaterThanOrEqual(0);
    expect(lot.spent).toBeGreaterThanOrEqual(0);
    expect(lot.expired).toBeGreaterThanOrEqual(0);
    expect(lot.reversed).toBeLessThanOrEqual(lot.amount);
    expect(lot.remaining + lot.spent + lot.expired + lot.reversedFromLot).toBe(lot.amount);
    // Due work first: nothing is left due at the time of the last decision.
    if (lot.status === 'pending') expect(lot.availableAt! > now.toISOString()).toBe(true);
    if (lot.remaining > 0 && lot.expiresAt !== null) expect(lot.expiresAt > now.toISOString()).toBe(true);
  }
}

/**
 * Due work decided one event at a time, the work listed afresh before each (what `decideDue` did
 * before it listed the lots' work once): its first event on each state, then the next state.
 */
function dueOneByOne(state: CustomerState, lifecycle: Lifecycle): CustomerEvent[] {
  const events: CustomerEvent[] = [];
  for (let current = state; ; ) {
    const first = decideDue(current, lifecycle).events[0];
    if (!first) return events;
    events.push(first);
    current = customerDecider.evolve(current, { ...first, recordedAt: lifecycle.now });
  }
}

describe('lifecycle decider properties', () => {
  it('keeps balance = earned − redeemed − expired − pending ≥ 0 = the available lots, no lot below 0, for any sequence', () => {
    fc.assert(
      fc.property(settingsArb, fc.array(op, { minLength: 10, maxLength: 60, size: 'large' }), (settings, ops) => {
        let now = new Date(T0);
        const lifecycle = (): Lifecycle => ({ now, settings, qualificationSince: null, tiers });
        const events: Array<CustomerEvent & { recordedAt: Date }> = [];
        let state = fold(customerDecider, [registered]);
        const credits: string[] = [];
        const redemptions: string[] = [];
        let seq = 0;

        const run = (command: CustomerCommand) => {
          let decided: CustomerEvent[];
          try {
            decided = customerDecider.decide(command, state);
          } catch (error) {
            if (!(error instanceof ApiError)) throw error;
            return;
          }
          for (const event of decided) {
            state = customerDecider.evolve(state, { ...event, recordedAt: now });
            events.push({ ...event, recordedAt: now });
            if ('balance' in event.data) expect(event.data.balance).toBe(state.balance);
          }
          checkInvariant(state, now);
        };

        for (const o of ops) {
          const id = `txn_${++seq}`;
          switch (o.kind) {
            case 'earn':
            case 'adjust': {
              const amount = o.kind === 'earn' ? Math.abs(o.amount) || 1 : o.amount || 1;
              const credit = amount > 0;
              run({
                type: 'RecordPoints',
                pointsType: o.kind,
                transactionId: id,
                amount,
                applyMultiplier: false,
                description: null,
                reference: null,
                metadata: {},
                tiers,
                availableAt: credit && o.availableIn !== null ? iso(now.getTime() + o.availableIn * 3_600_000) : undefined,
                expiresAt:
                  !credit || o.expiresIn === undefined
                    ? undefined
                    : o.expiresIn === null
                      ? null
                      : iso(now.getTime() + ((o.availableIn ?? 0) + o.expiresIn) * 3_600_000),
                lifecycle: lifecycle(),
              });
              if (credit) credits.push(id);
              break;
            }
            case 'deduct':
              run({ type: 'RecordPoints', pointsType: 'deduct', transactionId: id, amount: o.amount, applyMultiplier: false, description: null, reference: null, metadata: {}, tiers, lifecycle: lifecycle() });
              break;
            case 'redeem':
              run({
                type: 'RedeemReward',
                redemptionId: `red_${seq}`,
                reward: { reward_id: 'rew_1', business_id: 'biz_p', title: 'Mug', points_cost: o.amount, reward_type: 'physical', description: null, stock_quantity: null, active: true, metadata: {} },
                reference: null,
                metadata: {},
                lifecycle: lifecycle(),
              });
              redemptions.push(`red_${seq}`);
              break;
            case 'cancel':
              if (redemptions.length > 0) run({ type: 'CancelRedemption', redemptionId: redemptions[o.pick % redemptions.length]!, transactionId: id, lifecycle: lifecycle() });
              break;
            case 'reverse': {
              if (credits.length === 0) break;
              const before = state;
              const reversedId = credits[o.pick % credits.length]!;
              run({ type: 'ReverseTransaction', transactionId: id, reversedId, amount: o.amount, description: null, reference: null, lifecycle: lifecycle() });
              const lot = state.lots.values().find((l) => l.transactionId === reversedId);
              if (lot && state !== before) expect(state.lifetimeEarned).toBeLessThan(before.lifetimeEarned);
              break;
            }
            case 'wait':
              now = new Date(now.getTime() + o.hours * 3_600_000);
              expect(decideDue(state, lifecycle()).events).toEqual(dueOneByOne(state, lifecycle()));
              run({ type: 'ApplyDueWork', lifecycle: lifecycle() });
              break;
          }
        }
        // The state the decisions made is the one a replay of their events gives.
        expect(fold(customerDecider, [registered, ...events])).toEqual(state);
        // Nothing is due before nextDueAt; at it, something is.
        const next = nextDueAt(state, { settings, qualificationSince: null, tiers });
        if (next !== null) {
          expect(next > now.toISOString()).toBe(true);
          const justBefore = new Date(Date.parse(next) - 1);
          expect(customerDecider.decide({ type: 'ApplyDueWork', lifecycle: { ...lifecycle(), now: justBefore } }, state)).toEqual([]);
          expect(customerDecider.decide({ type: 'ApplyDueWork', lifecycle: { ...lifecycle(), now: new Date(next) } }, state).length).toBeGreaterThan(0);
        }
      }),
      { numRuns: 200 },
    );
    // 200 random histories take about 3 s on a quiet 2-core machine: give a busy one room.
  }, 30_000);

  it('refuses every reversal beyond the unreversed amount, and a reversal of a debit, deciding nothing', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 500 }), fc.integer({ min: 1, max: 500 }), (credit, reversal) => {
        const lifecycle: Lifecycle = { now: new Date(T0), settings: DEFAULT_PROGRAM_SETTINGS, qualificationSince: null, tiers: [] };
        let state = fold(customerDecider, [{ type: 'CustomerRegistered', data: { customer_id: 'cust_r', business_id: 'biz_r', email: 'r@example.com', phone: null, first_name: null, last_name: null, external_reference: null, metadata: {} } }]);
        for (const e of customerDecider.decide({ type: 'RecordPoints', pointsType: 'earn', transactionId: 'txn_c', amount: credit, applyMultiplier: false, description: null, reference: null, metadata: {}, tiers: [], lifecycle }, state)) {
          state = customerDecider.evolve(state, { ...e, recordedAt: lifecycle.now });
        }
        const reverse = (amount: number) => () =>
          customerDecider.decide({ type: 'ReverseTransaction', transactionId: 'txn_r', reversedId: 'txn_c', amount, description: null, reference: null, lifecycle }, state);
        if (reversal > credit) expect(reverse(reversal)).toThrow(expect.objectContaining({ code: 'reversal_exceeds_credit' }));
        else expect(reverse(reversal)()[0]).toMatchObject({ type: 'PointsReversed', data: { amount: reversal, from_lot: reversal, balance: credit - reversal } });
      }),
    );
  });

  it('needs no lifecycle to replay events written before lots: debits are planned oldest first', () => {
    const state = fold(customerDecider, [
      { type: 'CustomerRegistered', data: { customer_id: 'cust_o', business_id: 'biz_o', email: 'o@example.com', phone: null, first_name: null, last_name: null, external_reference: null, metadata: {} } },
      { type: 'PointsEarned', data: { transaction_id: 'txn_a', amount: 50, base_amount: 50, multiplier: 1, balance: 50, description: null, reference: null, metadata: {}, available_at: null, expires_at: null }, recordedAt: new Date(T0) },
      { type: 'PointsEarned', data: { transaction_id: 'txn_b', amount: 50, base_amount: 50, multiplier: 1, balance: 100, description: null, reference: null, metadata: {}, available_at: null, expires_at: null }, recordedAt: new Date(T0 + DAY) },
      { type: 'PointsDeducted', data: { transaction_id: 'txn_c', amount: 70, balance: 30, description: null, reference: null, metadata: {} }, recordedAt: new Date(T0 + 2 * DAY) },
    ] as Array<CustomerEvent & { recordedAt?: Date }>);
    expect(state.lots.values().map((l) => [l.transactionId, l.remaining])).toEqual([
      ['txn_a', 0],
      ['txn_b', 30],
    ]);
  });
});

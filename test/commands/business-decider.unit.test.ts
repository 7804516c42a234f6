import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type BusinessCommand,
  businessDecider,
  type BusinessEvent,
  type BusinessState,
  PLAN_LIMITS,
} from '../../src/commands/business/business-decider.js';
import { fold } from '../../src/commands/decider.js';
import { deciderSpec } from '../support/decider-spec.js';
import type { Plan } from '../../src/events/business-events.js';

const { given } = deciderSpec(businessDecider);

const created = (plan: Plan): BusinessEvent => ({ type: 'BusinessCreated', data: { business_id: 'biz_1', name: 'Bakery', plan } });
const counted = (count: number): BusinessEvent => ({
  type: 'BusinessCustomerCounted',
  data: { customer_id: `cust_${count}`, customer_count: count },
});
const countCustomer = (customerId = 'cust_new'): BusinessCommand => ({ type: 'CountCustomer', customerId });
const changePlan = (plan: Plan, customerCount: number): BusinessCommand => ({ type: 'ChangePlan', businessId: 'biz_1', plan, customerCount });
const planChanged = (plan: Plan, previous: Plan, count: number): BusinessEvent => ({
  type: 'BusinessPlanChanged',
  data: { plan, previous_plan: previous, customer_count: count },
});

describe('business decider', () => {
  it('creates a business on its plan', () => {
    given().when({ type: 'CreateBusiness', businessId: 'biz_1', name: 'Bakery', plan: 'free' }).then([created('free')]);
    expect(fold(businessDecider, [created('free')])).toEqual({ exists: true, plan: 'free', customerCount: 0 });
  });

  it('refuses to create the same business twice with a conflict', () => {
    given(created('unlimited'))
      .when({ type: 'CreateBusiness', businessId: 'biz_1', name: 'Bakery', plan: 'unlimited' })
      .thenThrows('conflict', 409);
  });

  it('counts a customer, the event carrying the new count', () => {
    given(created('free')).when(countCustomer('cust_a')).then([
      { type: 'BusinessCustomerCounted', data: { customer_id: 'cust_a', customer_count: 1 } },
    ]);
    given(created('free'), counted(1), counted(2)).when(countCustomer('cust_c')).then([
      { type: 'BusinessCustomerCounted', data: { customer_id: 'cust_c', customer_count: 3 } },
    ]);
  });

  it('lets a free business count customers up to its limit, one by one, then refuses with plan_limit_reached', () => {
    expect(PLAN_LIMITS.free).toBe(1000); // CONTRACT §1
    let state: BusinessState = fold(businessDecider, [created('free')]);
    for (let n = 1; n <= PLAN_LIMITS.free; n++) {
      const events = businessDecider.decide(countCustomer(`cust_${n}`), state);
      expect(events).toEqual([counted(n)]);
      for (const event of events) state = businessDecider.evolve(state, event);
    }
    expect(state.customerCount).toBe(1000);
    given(created('free'), counted(1000)).when(countCustomer()).thenThrows('plan_limit_reached', 403);
  });

  it('accepts the 1,000th customer of a free business and refuses the 1,001st', () => {
    given(created('free'), counted(999)).when(countCustomer()).then([
      { type: 'BusinessCustomerCounted', data: { customer_id: 'cust_new', customer_count: 1000 } },
    ]);
    given(created('free'), counted(1000)).when(countCustomer()).thenThrows('plan_limit_reached', 403);
  });

  it('decides a free count by the folded count alone: accepted below the limit, refused at or above it', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 5000 }), (count) => {
        const state = fold(businessDecider, [created('free'), counted(count)]);
        if (count < PLAN_LIMITS.free) {
          expect(businessDecider.decide(countCustomer(), state)).toEqual([
            { type: 'BusinessCustomerCounted', data: { customer_id: 'cust_new', customer_count: count + 1 } },
          ]);
        } else {
          expect(() => businessDecider.decide(countCustomer(), state)).toThrow(expect.objectContaining({ code: 'plan_limit_reached' }));
        }
      }),
      { numRuns: 300, examples: [[999], [1000], [1001]] },
    );
  });

  it('never refuses a customer on the unlimited plan, however many it has', () => {
    given(created('unlimited'), counted(5_000_000)).when(countCustomer()).then([
      { type: 'BusinessCustomerCounted', data: { customer_id: 'cust_new', customer_count: 5_000_001 } },
    ]);
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 1_000_000_000 }), (count) => {
        const state = fold(businessDecider, [created('unlimited'), counted(count)]);
        expect(businessDecider.decide(countCustomer(), state)).toHaveLength(1);
      }),
      { numRuns: 300, examples: [[1000], [1001]] },
    );
  });

  it('moves a free business at its limit to unlimited, after which it counts customers past the limit', () => {
    given(created('free'), counted(1000)).when(changePlan('unlimited', 1000)).then([planChanged('unlimited', 'free', 1000)]);
    given(created('free'), counted(1000), planChanged('unlimited', 'free', 1000)).when(countCustomer()).then([
      { type: 'BusinessCustomerCounted', data: { customer_id: 'cust_new', customer_count: 1001 } },
    ]);
  });

  it('moves an unlimited business to free with the customers it has, and holds it to the limit from there', () => {
    // An unlimited business counts nothing on its stream: the caller's count is the one that holds.
    given(created('unlimited')).when(changePlan('free', 1500)).then([planChanged('free', 'unlimited', 1500)]);
    given(created('unlimited'), planChanged('free', 'unlimited', 1500)).when(countCustomer()).thenThrows('plan_limit_reached', 403);
    given(created('unlimited'), planChanged('free', 'unlimited', 998)).when(countCustomer()).then([
      { type: 'BusinessCustomerCounted', data: { customer_id: 'cust_new', customer_count: 999 } },
    ]);
    // A count behind the stream's own (a read model lagging) never lowers it.
    given(created('free'), counted(1000), planChanged('unlimited', 'free', 1000)).when(changePlan('free', 990)).then([
      planChanged('free', 'unlimited', 1000),
    ]);
    expect(fold(businessDecider, [created('unlimited'), planChanged('free', 'unlimited', 7)])).toEqual({ exists: true, plan: 'free', customerCount: 7 });
  });

  it('decides nothing for the plan a business is on, and refuses an unknown business with not_found', () => {
    given(created('free'), counted(12)).when(changePlan('free', 12)).then([]);
    given(created('unlimited')).when(changePlan('unlimited', 3)).then([]);
    given().when(changePlan('unlimited', 0)).thenThrows('not_found', 404);
  });
});

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
});

import { errors } from '../../errors.js';
import type { EventOf } from '../../events/catalogue.js';
import type { Plan } from '../../events/business-events.js';
import type { Decider } from '../decider.js';

export type BusinessEvent = EventOf<'BusinessCreated' | 'BusinessCustomerCounted' | 'BusinessPlanChanged'>;

export type BusinessCommand =
  | { type: 'CreateBusiness'; businessId: string; name: string; plan: Plan }
  | { type: 'CountCustomer'; customerId: string }
  /** `customerCount`: the customers the business has now, counted by the caller (an unlimited plan counts none on the stream). */
  | { type: 'ChangePlan'; businessId: string; plan: Plan; customerCount: number };

export interface BusinessState {
  exists: boolean;
  plan: Plan;
  customerCount: number;
}

/** Customers a business on the free plan may have (CONTRACT.md §1). */
export const PLAN_LIMITS: Record<Plan, number> = { free: 1000, unlimited: Number.POSITIVE_INFINITY };

export const businessDecider: Decider<BusinessCommand, BusinessState, BusinessEvent> = {
  initialState: () => ({ exists: false, plan: 'unlimited', customerCount: 0 }),

  evolve(state, event) {
    switch (event.type) {
      case 'BusinessCreated':
        return { ...state, exists: true, plan: event.data.plan };
      case 'BusinessCustomerCounted':
        return { ...state, customerCount: event.data.customer_count };
      case 'BusinessPlanChanged':
        return { ...state, plan: event.data.plan, customerCount: event.data.customer_count };
      default: {
        const exhaustive: never = event;
        return exhaustive;
      }
    }
  },

  decide(command, state) {
    switch (command.type) {
      case 'CreateBusiness':
        if (state.exists) throw errors.conflict(`Business '${command.businessId}' already exists.`);
        return [{ type: 'BusinessCreated', data: { business_id: command.businessId, name: command.name, plan: command.plan } }];
      case 'CountCustomer': {
        const limit = PLAN_LIMITS[state.plan];
        if (state.customerCount >= limit) throw errors.planLimitReached(limit);
        return [
          { type: 'BusinessCustomerCounted', data: { customer_id: command.customerId, customer_count: state.customerCount + 1 } },
        ];
      }
      case 'ChangePlan': {
        if (!state.exists) throw errors.notFound('not_found', 'business', command.businessId);
        if (state.plan === command.plan) return [];
        // Customers are never removed, so the higher of the two counts is the closer one.
        const customerCount = Math.max(state.customerCount, command.customerCount);
        return [{ type: 'BusinessPlanChanged', data: { plan: command.plan, previous_plan: state.plan, customer_count: customerCount } }];
      }
      default: {
        const exhaustive: never = command;
        return exhaustive;
      }
    }
  },
};

import { ApiError, errors } from '../../errors.js';
import type { EventOf } from '../../events/catalogue.js';
import type { RewardDefinition } from '../../events/reward-events.js';
import { changedFields } from '../changed-fields.js';
import type { Decider } from '../decider.js';

export type RewardEvent = EventOf<'RewardCreated' | 'RewardUpdated' | 'RewardStockTaken' | 'RewardStockReturned'>;

type RewardChanges = EventOf<'RewardUpdated'>['data'];

export type RewardCommand =
  | { type: 'CreateReward'; reward: RewardDefinition }
  | { type: 'UpdateReward'; changes: RewardChanges }
  | { type: 'TakeStock'; redemptionId: string; customerId: string }
  | { type: 'ReturnStock'; redemptionId: string; customerId: string };

/** A reward's definition and stock; null until created. */
export interface RewardState {
  reward: RewardDefinition | null;
}

export const rewardDecider: Decider<RewardCommand, RewardState, RewardEvent> = {
  initialState: () => ({ reward: null }),

  evolve(state, event) {
    switch (event.type) {
      case 'RewardCreated':
        return { reward: event.data };
      case 'RewardUpdated':
        return { reward: { ...state.reward!, ...event.data } };
      case 'RewardStockTaken':
      case 'RewardStockReturned':
        return { reward: { ...state.reward!, stock_quantity: event.data.stock_quantity } };
      default: {
        const exhaustive: never = event;
        return exhaustive;
      }
    }
  },

  decide(command, state) {
    if (command.type === 'CreateReward') {
      if (state.reward) throw errors.conflict(`Reward '${command.reward.reward_id}' already exists.`);
      return [{ type: 'RewardCreated', data: command.reward }];
    }
    const reward = state.reward;
    if (!reward) throw errors.rewardNotFound('unknown');
    switch (command.type) {
      case 'UpdateReward': {
        const changed = changedFields(reward, command.changes);
        return Object.keys(changed).length === 0 ? [] : [{ type: 'RewardUpdated', data: changed }];
      }
      case 'TakeStock':
        // Unlimited rewards keep no stock: nothing to write to this stream.
        if (reward.stock_quantity === null) return [];
        if (reward.stock_quantity <= 0) {
          throw new ApiError(409, 'out_of_stock', `Reward '${reward.reward_id}' is out of stock.`);
        }
        return [
          {
            type: 'RewardStockTaken',
            data: { redemption_id: command.redemptionId, customer_id: command.customerId, stock_quantity: reward.stock_quantity - 1 },
          },
        ];
      case 'ReturnStock':
        if (reward.stock_quantity === null) return [];
        return [
          {
            type: 'RewardStockReturned',
            data: { redemption_id: command.redemptionId, customer_id: command.customerId, stock_quantity: reward.stock_quantity + 1 },
          },
        ];
      default: {
        const exhaustive: never = command;
        return exhaustive;
      }
    }
  },
};

import { errors } from '../../errors.js';
import type { CommandContext } from '../../events/metadata.js';
import { type DecidedWrite, decidedWrite, type Loaded } from '../aggregate.js';
import type { CommandDeps } from '../command-bus.js';
import { rewardDecider, type RewardState } from '../reward/reward-decider.js';
import { loadReward } from '../reward/reward-commands.js';
import { streams } from '../../events/streams.js';
import { lifecycleAt, loadProgram } from '../program/program-commands.js';
import { customerDecider } from './customer-decider.js';
import { assertReferenceFree, customerAnswer, customerWrite, loadCustomer, type RecordedEvent, referenceWrites } from './customer-stream.js';

export interface RedeemInput {
  customerId: string;
  rewardId: string;
  reference: string | null;
  metadata: Record<string, unknown>;
}

export function redemptionCommands({ bus, ids, reads }: CommandDeps) {
  /**
   * A change to a customer and one reward together: the reward's lock is taken first, then the
   * customer's (always in that order, so two changes cannot wait on each other), and both
   * streams are appended in one atomic append with their expected revisions.
   */
  const withReward = (customerId: string, rewardId: string) => ({
    lock: [streams.reward(rewardId), streams.customer(customerId)],
    answer: customerAnswer(customerId),
  });

  return {
    /** Spends points on a reward; returns the `RewardRedeemed`. */
    async redeem(ctx: CommandContext, input: RedeemInput): Promise<RecordedEvent> {
      const redemptionId = ids('redemption');
      return bus.handle(ctx, withReward(input.customerId, input.rewardId), async (load) => {
        const customer = await loadCustomer(load, ctx, input.customerId);
        await assertReferenceFree(reads, input.customerId, input.reference);
        const reward = await loadReward(load, ctx, input.rewardId);
        const program = await loadProgram(load, ctx.businessId);
        const customerEvents = customerDecider.decide(
          {
            type: 'RedeemReward',
            redemptionId,
            reward: reward.reward,
            reference: input.reference,
            metadata: input.metadata,
            lifecycle: lifecycleAt(ctx, program),
          },
          customer.state,
        );
        const rewardEvents = rewardDecider.decide({ type: 'TakeStock', redemptionId, customerId: input.customerId }, reward.state);
        return [
          customerWrite(input.customerId, customer, customerEvents, ctx),
          rewardWrite(input.rewardId, reward, rewardEvents),
          ...referenceWrites(input.customerId, input.reference, { kind: 'redemption', id: redemptionId }),
        ];
      });
    },

    /** Gives the points (and the stock unit) of a redemption back; returns the `RedemptionCancelled` (its `balance` is the one after it). */
    async cancel(ctx: CommandContext, customerId: string, redemptionId: string): Promise<RecordedEvent> {
      // Which reward's lock to take, read before taking it (the decision below checks again).
      const { state } = await loadCustomer(bus.load, ctx, customerId);
      const rewardId = state.redemptions.get(redemptionId)?.rewardId;
      if (!rewardId) throw errors.redemptionNotFound(redemptionId);
      return bus.handle(ctx, withReward(customerId, rewardId), async (load) => {
        const customer = await loadCustomer(load, ctx, customerId);
        const program = await loadProgram(load, ctx.businessId);
        const customerEvents = customerDecider.decide(
          { type: 'CancelRedemption', redemptionId, transactionId: ids('transaction'), lifecycle: lifecycleAt(ctx, program) },
          customer.state,
        );
        const reward = await loadReward(load, ctx, rewardId);
        const rewardEvents = rewardDecider.decide({ type: 'ReturnStock', redemptionId, customerId }, reward.state);
        return [customerWrite(customerId, customer, customerEvents, ctx), rewardWrite(rewardId, reward, rewardEvents)];
      });
    },
  };
}

/** The reward's write: its stock events, or (for unlimited stock) a check that the reward did not change. */
function rewardWrite(rewardId: string, reward: Loaded<RewardState>, events: ReturnType<typeof rewardDecider.decide>): DecidedWrite {
  return decidedWrite(streams.reward(rewardId), reward, rewardDecider, events);
}

export type RedemptionCommands = ReturnType<typeof redemptionCommands>;

import { errors } from '../../errors.js';
import type { CommandContext } from '../../events/metadata.js';
import { newId } from '../../ids.js';
import type { AppendWrite } from '../../store/event-store.js';
import { withMetadata } from '../aggregate.js';
import type { CommandDeps } from '../command-deps.js';
import { rewardDecider } from '../reward/reward-decider.js';
import { loadReward } from '../reward/reward-commands.js';
import { streams } from '../streams.js';
import { customerDecider } from './customer-decider.js';
import { assertReferenceFree, changeCustomer, customerWrite, loadCustomer, referenceWrites } from './customer-stream.js';

export interface RedeemInput {
  customerId: string;
  rewardId: string;
  reference: string | null;
  metadata: Record<string, unknown>;
}

export function redemptionCommands(deps: CommandDeps) {
  /**
   * A change to a customer and one reward together: the reward's lock is taken first, then the
   * customer's (always in that order, so two changes cannot wait on each other), and both
   * streams are appended in one atomic append with their expected revisions.
   */
  function withReward(ctx: CommandContext, customerId: string, rewardId: string, decide: Parameters<typeof changeCustomer>[3]) {
    return changeCustomer(deps, ctx, customerId, decide, [streams.reward(rewardId)]);
  }

  return {
    /** Spends points on a reward; returns the redemption id. */
    async redeem(ctx: CommandContext, input: RedeemInput): Promise<string> {
      const redemptionId = newId('redemption');
      await withReward(ctx, input.customerId, input.rewardId, async ({ state, revision }) => {
        await assertReferenceFree(deps, input.customerId, input.reference);
        const reward = await loadReward(deps, ctx, input.rewardId);
        const customerEvents = customerDecider.decide(
          { type: 'RedeemReward', redemptionId, reward: reward.reward, reference: input.reference, metadata: input.metadata },
          state,
        );
        const rewardEvents = rewardDecider.decide({ type: 'TakeStock', redemptionId, customerId: input.customerId }, reward.state);
        return [
          customerWrite(input.customerId, revision, customerEvents, ctx),
          ...rewardWrite(input.rewardId, reward.revision, rewardEvents, ctx),
          ...referenceWrites(ctx, input.customerId, input.reference, { kind: 'redemption', id: redemptionId }),
        ];
      });
      return redemptionId;
    },

    /** Gives the points (and the stock unit) of a redemption back. */
    async cancel(ctx: CommandContext, customerId: string, redemptionId: string): Promise<void> {
      const { state } = await loadCustomer(deps, ctx, customerId);
      const rewardId = state.redemptions[redemptionId]?.rewardId;
      if (!rewardId) throw errors.redemptionNotFound(redemptionId);
      await withReward(ctx, customerId, rewardId, async ({ state, revision }) => {
        const customerEvents = customerDecider.decide({ type: 'CancelRedemption', redemptionId, transactionId: newId('transaction') }, state);
        const reward = await loadReward(deps, ctx, rewardId);
        const rewardEvents = rewardDecider.decide({ type: 'ReturnStock', redemptionId, customerId }, reward.state);
        return [customerWrite(customerId, revision, customerEvents, ctx), ...rewardWrite(rewardId, reward.revision, rewardEvents, ctx)];
      });
    },
  };
}

function rewardWrite(rewardId: string, expected: AppendWrite['expected'], events: ReturnType<typeof rewardDecider.decide>, ctx: CommandContext): AppendWrite[] {
  return events.length ? [{ stream: streams.reward(rewardId), expected, events: withMetadata(events, ctx) }] : [];
}

export type RedemptionCommands = ReturnType<typeof redemptionCommands>;

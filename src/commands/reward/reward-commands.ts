import { errors } from '../../errors.js';
import type { AnsweredEvent, CommandContext } from '../../events/metadata.js';
import type { RewardDefinition } from '../../events/reward-events.js';
import { decidedWrite, type Load, type Loaded } from '../aggregate.js';
import { type CommandDeps, firstOn, startStream } from '../command-bus.js';
import { streams } from '../../events/streams.js';
import { rewardDecider, type RewardState } from './reward-decider.js';

export type RewardInput = Omit<RewardDefinition, 'reward_id' | 'business_id' | 'active'> & { active?: boolean };
export type RewardChanges = Partial<Omit<RewardDefinition, 'reward_id' | 'business_id'>>;

/** Loads a reward of the caller's business, or 404 (another business's reward is not found either). */
export async function loadReward(load: Load, ctx: CommandContext, rewardId: string): Promise<Loaded<RewardState> & { reward: RewardDefinition }> {
  const loaded = await load(streams.reward(rewardId), rewardDecider);
  const reward = loaded.state.reward;
  if (!reward || reward.business_id !== ctx.businessId) throw errors.rewardNotFound(rewardId);
  return { ...loaded, reward };
}

export function rewardCommands({ bus, ids }: CommandDeps) {
  return {
    /** Returns the `RewardCreated`. */
    create(ctx: CommandContext, input: RewardInput): Promise<AnsweredEvent> {
      const rewardId = ids('reward');
      const reward: RewardDefinition = { ...input, reward_id: rewardId, business_id: ctx.businessId, active: input.active ?? true };
      const stream = streams.reward(rewardId);
      return bus.handle(ctx, { lock: [stream], answer: firstOn(stream) }, startStream(stream, rewardDecider, (state) => rewardDecider.decide({ type: 'CreateReward', reward }, state)));
    },

    async update(ctx: CommandContext, rewardId: string, changes: RewardChanges): Promise<void> {
      const stream = streams.reward(rewardId);
      await bus.handle(ctx, { lock: [stream] }, async (load) => {
        const reward = await loadReward(load, ctx, rewardId);
        return [decidedWrite(stream, reward, rewardDecider, rewardDecider.decide({ type: 'UpdateReward', changes }, reward.state))];
      });
    },
  };
}

export type RewardCommands = ReturnType<typeof rewardCommands>;

import type { Plan } from '../../events/business-events.js';
import type { CommandContext } from '../../events/metadata.js';
import { newId } from '../../ids.js';
import { withMetadata } from '../aggregate.js';
import type { CommandDeps } from '../command-deps.js';
import { streams } from '../streams.js';
import { businessDecider } from './business-decider.js';

export function businessCommands(deps: CommandDeps) {
  return {
    /** Creates a business; `ctx.businessId` is ignored (the new id is the business's own). */
    async create(ctx: Omit<CommandContext, 'businessId'>, input: { name: string; plan: Plan }): Promise<string> {
      const businessId = newId('business');
      const events = businessDecider.decide(
        { type: 'CreateBusiness', businessId, name: input.name, plan: input.plan },
        businessDecider.initialState(),
      );
      const result = await deps.store.append([
        { stream: streams.business(businessId), expected: 'no_stream', events: withMetadata(events, { ...ctx, businessId }) },
      ]);
      await deps.settle(result.position);
      return businessId;
    },
  };
}

export type BusinessCommands = ReturnType<typeof businessCommands>;

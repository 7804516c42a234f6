import type { Plan } from '../../events/business-events.js';
import type { CommandContext } from '../../events/metadata.js';
import { newId } from '../../ids.js';
import { decidedWrite, withMetadata } from '../aggregate.js';
import type { CommandDeps } from '../command-deps.js';
import { streams } from '../../events/streams.js';
import { write } from '../write.js';
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

    /**
     * Moves the business to `plan`; false when it is on that plan already (nothing written).
     * `customerCount` is how many customers it has now (from the read models): a free plan counts
     * on from it. Throws 404 `not_found` for an unknown business.
     */
    async setPlan(ctx: CommandContext, input: { plan: Plan; customerCount: number }): Promise<boolean> {
      const stream = streams.business(ctx.businessId);
      const written = await write(deps, [stream], async (load) => {
        const business = await load(stream, businessDecider);
        const command = { type: 'ChangePlan' as const, businessId: ctx.businessId, ...input };
        return [decidedWrite(stream, business, businessDecider, businessDecider.decide(command, business.state), ctx)];
      });
      return written !== null;
    },
  };
}

export type BusinessCommands = ReturnType<typeof businessCommands>;

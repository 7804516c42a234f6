import type { Plan } from '../../events/business-events.js';
import type { CommandContext } from '../../events/metadata.js';
import { decidedWrite } from '../aggregate.js';
import type { CommandDeps } from '../command-deps.js';
import { streams } from '../../events/streams.js';
import { createStream, write } from '../write.js';
import { businessDecider } from './business-decider.js';

export function businessCommands(deps: CommandDeps) {
  return {
    /** Creates a business; `ctx.businessId` is ignored (the new id is the business's own). */
    async create(ctx: Omit<CommandContext, 'businessId'>, input: { name: string; plan: Plan }): Promise<string> {
      const businessId = deps.ids('business');
      const decide = (state: ReturnType<typeof businessDecider.initialState>) =>
        businessDecider.decide({ type: 'CreateBusiness', businessId, name: input.name, plan: input.plan }, state);
      await createStream(deps, streams.business(businessId), businessDecider, decide, { ...ctx, businessId });
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

import type { Plan } from '../../events/business-events.js';
import type { CommandContext } from '../../events/metadata.js';
import { decidedWrite } from '../aggregate.js';
import { type CommandDeps, firstOn, startStream } from '../command-bus.js';
import { streams } from '../../events/streams.js';
import { businessDecider } from './business-decider.js';

export function businessCommands({ bus, ids }: CommandDeps) {
  return {
    /** Creates a business; `ctx.businessId` is ignored (the new id is the business's own). */
    async create(ctx: Omit<CommandContext, 'businessId'>, input: { name: string; plan: Plan }): Promise<string> {
      const businessId = ids('business');
      const stream = streams.business(businessId);
      await bus.handle(
        { ...ctx, businessId },
        { lock: [stream], answer: firstOn(stream) },
        startStream(stream, businessDecider, (state) => businessDecider.decide({ type: 'CreateBusiness', businessId, name: input.name, plan: input.plan }, state)),
      );
      return businessId;
    },

    /**
     * Moves the business to `plan`; false when it is on that plan already (nothing written).
     * `customerCount` is how many customers it has now (from the read models): a free plan counts
     * on from it. Throws 404 `not_found` for an unknown business.
     */
    async setPlan(ctx: CommandContext, input: { plan: Plan; customerCount: number }): Promise<boolean> {
      const stream = streams.business(ctx.businessId);
      const written = await bus.handle(ctx, { lock: [stream] }, async (load) => {
        const business = await load(stream, businessDecider);
        const command = { type: 'ChangePlan' as const, businessId: ctx.businessId, ...input };
        return [decidedWrite(stream, business, businessDecider, businessDecider.decide(command, business.state))];
      });
      return written !== null;
    },
  };
}

export type BusinessCommands = ReturnType<typeof businessCommands>;

import { ApiError } from '../../errors.js';
import type { CommandContext } from '../../events/metadata.js';
import type { CommandDeps } from '../command-bus.js';
import { streams } from '../../events/streams.js';
import { lifecycleAt, loadProgram } from '../program/program-commands.js';
import { customerDecider } from './customer-decider.js';
import { assertReferenceFree, customerAnswer, customerWrite, loadCustomer, type RecordedEvent, referenceWrites } from './customer-stream.js';

export interface RecordEventInput {
  customerId: string;
  eventType: string;
  properties: Record<string, unknown>;
  reference: string | null;
  /** When the points become spendable / expire (absent: the policy; `expiresAt: null`: never). */
  availableAt?: string | undefined;
  expiresAt?: string | null | undefined;
}

export function eventCommands({ bus, ids, reads }: CommandDeps) {
  return {
    /**
     * Records an occurrence of an event type on the customer's stream, worth the type's points
     * under the customer's tier multiplier (0 points is recorded too); returns the `EventRecorded`.
     */
    async record(ctx: CommandContext, input: RecordEventInput): Promise<RecordedEvent> {
      const eventId = ids('event');
      return bus.handle(ctx, { lock: [streams.customer(input.customerId)], answer: customerAnswer(input.customerId) }, async (load) => {
        const customer = await loadCustomer(load, ctx, input.customerId);
        await assertReferenceFree(reads, input.customerId, input.reference);
        const program = await loadProgram(load, ctx.businessId);
        const eventType = program.eventTypes[input.eventType];
        if (!eventType) {
          throw new ApiError(422, 'unknown_event_type', `No event type named '${input.eventType}'. Create it first with POST /api/v1/event-types.`);
        }
        const events = customerDecider.decide(
          {
            type: 'RecordEvent',
            eventId,
            eventType,
            properties: input.properties,
            reference: input.reference,
            tiers: program.tiers,
            availableAt: input.availableAt,
            expiresAt: input.expiresAt,
            lifecycle: lifecycleAt(ctx, program),
          },
          customer.state,
        );
        return [
          customerWrite(input.customerId, customer, events, ctx),
          program.unchanged,
          ...referenceWrites(input.customerId, input.reference, { kind: 'event', id: eventId }),
        ];
      });
    },
  };
}

export type EventCommands = ReturnType<typeof eventCommands>;

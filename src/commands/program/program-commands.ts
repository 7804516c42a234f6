import type { AnsweredEvent, CommandContext } from '../../events/metadata.js';
import type { EventTypeDefinition, TierDefinition } from '../../events/program-events.js';
import type { AppendWrite } from '../../store/event-store.js';
import { decidedWrite, type Load, unchangedSince } from '../aggregate.js';
import type { CommandDeps } from '../command-deps.js';
import { answeredBy, firstAppended, write, type Written } from '../write.js';
import { streams } from '../../events/streams.js';
import { type ProgramCommand, programDecider, type ProgramState, tiersByThreshold } from './program-decider.js';

/** A business's program as commands need it: tiers by threshold and event types by name. */
export interface Program {
  eventTypes: ProgramState['eventTypes'];
  tiers: TierDefinition[];
  /** The condition to append with a decision made on this program: it must not have changed since. */
  unchanged: AppendWrite;
}

export async function loadProgram(load: Load, businessId: string): Promise<Program> {
  const stream = streams.program(businessId);
  const loaded = await load(stream, programDecider);
  return { eventTypes: loaded.state.eventTypes, tiers: tiersByThreshold(loaded.state), unchanged: unchangedSince(stream, loaded) };
}

export type TierInput = Omit<TierDefinition, 'tier_id'>;
export type EventTypeInput = Omit<EventTypeDefinition, 'event_type_id'>;

export function programCommands(deps: CommandDeps) {
  /** Decides on the business's program stream and appends, serialized per business. */
  async function change(ctx: CommandContext, command: ProgramCommand): Promise<Written | null> {
    const stream = streams.program(ctx.businessId);
    return write(
      deps,
      [stream],
      async (load) => {
        const program = await load(stream, programDecider);
        return [decidedWrite(stream, program, programDecider, programDecider.decide(command, program.state), ctx)];
      },
      answeredBy(ctx, (writes) => firstAppended({ writes }, stream)),
    );
  }

  return {
    /** Returns the `TierCreated`. */
    async createTier(ctx: CommandContext, input: TierInput): Promise<AnsweredEvent> {
      const tierId = deps.ids('tier');
      return firstAppended(await change(ctx, { type: 'CreateTier', tier: { tier_id: tierId, ...input } }), streams.program(ctx.businessId));
    },
    updateTier: (ctx: CommandContext, tierId: string, changes: Partial<TierInput>) =>
      change(ctx, { type: 'UpdateTier', tierId, changes }),
    /** Returns the `EventTypeCreated`. */
    async createEventType(ctx: CommandContext, input: EventTypeInput): Promise<AnsweredEvent> {
      const eventTypeId = deps.ids('eventType');
      return firstAppended(await change(ctx, { type: 'CreateEventType', eventType: { event_type_id: eventTypeId, ...input } }), streams.program(ctx.businessId));
    },
    updateEventType: (ctx: CommandContext, name: string, changes: Partial<Omit<EventTypeInput, 'name'>>) =>
      change(ctx, { type: 'UpdateEventType', name, changes }),
  };
}

export type ProgramCommands = ReturnType<typeof programCommands>;

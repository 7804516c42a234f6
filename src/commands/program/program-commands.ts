import type { CommandContext } from '../../events/metadata.js';
import type { EventTypeDefinition, TierDefinition } from '../../events/program-events.js';
import { newId } from '../../ids.js';
import { loadAggregate, withMetadata } from '../aggregate.js';
import type { CommandDeps } from '../command-deps.js';
import { write } from '../write.js';
import { streams } from '../streams.js';
import { type ProgramCommand, programDecider, type ProgramState, tiersByThreshold } from './program-decider.js';

/** A business's program as commands need it: tiers by threshold and event types by name. */
export async function loadProgram(deps: CommandDeps, businessId: string): Promise<{ eventTypes: ProgramState['eventTypes']; tiers: TierDefinition[] }> {
  const { state } = await loadAggregate(deps.store, streams.program(businessId), programDecider, deps.cache);
  return { eventTypes: state.eventTypes, tiers: tiersByThreshold(state) };
}

export type TierInput = Omit<TierDefinition, 'tier_id'>;
export type EventTypeInput = Omit<EventTypeDefinition, 'event_type_id'>;

export function programCommands(deps: CommandDeps) {
  /** Decides on the business's program stream and appends, serialized per business. */
  function change(ctx: CommandContext, command: ProgramCommand): Promise<void> {
    const stream = streams.program(ctx.businessId);
    return write(deps, [stream], async () => {
      const { state, revision } = await loadAggregate(deps.store, stream, programDecider, deps.cache);
      return [{ stream, expected: revision, events: withMetadata(programDecider.decide(command, state), ctx) }];
    });
  }

  return {
    async createTier(ctx: CommandContext, input: TierInput): Promise<string> {
      const tierId = newId('tier');
      await change(ctx, { type: 'CreateTier', tier: { tier_id: tierId, ...input } });
      return tierId;
    },
    updateTier: (ctx: CommandContext, tierId: string, changes: Partial<TierInput>) =>
      change(ctx, { type: 'UpdateTier', tierId, changes }),
    async createEventType(ctx: CommandContext, input: EventTypeInput): Promise<string> {
      const eventTypeId = newId('eventType');
      await change(ctx, { type: 'CreateEventType', eventType: { event_type_id: eventTypeId, ...input } });
      return eventTypeId;
    },
    updateEventType: (ctx: CommandContext, name: string, changes: Partial<Omit<EventTypeInput, 'name'>>) =>
      change(ctx, { type: 'UpdateEventType', name, changes }),
  };
}

export type ProgramCommands = ReturnType<typeof programCommands>;

import { errors } from '../../errors.js';
import type { EventOf } from '../../events/catalogue.js';
import type { EventTypeDefinition, TierDefinition } from '../../events/program-events.js';
import { changedFields } from '../changed-fields.js';
import type { Decider } from '../decider.js';

export type ProgramEvent = EventOf<'TierCreated' | 'TierUpdated' | 'EventTypeCreated' | 'EventTypeUpdated'>;

type TierChanges = Partial<Omit<TierDefinition, 'tier_id'>>;
type EventTypeChanges = Partial<Omit<EventTypeDefinition, 'event_type_id' | 'name'>>;

export type ProgramCommand =
  | { type: 'CreateTier'; tier: TierDefinition }
  | { type: 'UpdateTier'; tierId: string; changes: TierChanges }
  | { type: 'CreateEventType'; eventType: EventTypeDefinition }
  | { type: 'UpdateEventType'; name: string; changes: EventTypeChanges };

/** A business's program: its tiers (by id) and event types (by name). */
export interface ProgramState {
  tiers: Record<string, TierDefinition>;
  eventTypes: Record<string, EventTypeDefinition>;
}

/** Tiers from the lowest threshold to the highest. */
export function tiersByThreshold(state: ProgramState): TierDefinition[] {
  return Object.values(state.tiers).sort((a, b) => a.points_threshold - b.points_threshold);
}

export const programDecider: Decider<ProgramCommand, ProgramState, ProgramEvent> = {
  initialState: () => ({ tiers: {}, eventTypes: {} }),

  evolve(state, event) {
    switch (event.type) {
      case 'TierCreated':
        return { ...state, tiers: { ...state.tiers, [event.data.tier_id]: event.data } };
      case 'TierUpdated': {
        const current = state.tiers[event.data.tier_id]!;
        return { ...state, tiers: { ...state.tiers, [event.data.tier_id]: { ...current, ...event.data } } };
      }
      case 'EventTypeCreated':
        return { ...state, eventTypes: { ...state.eventTypes, [event.data.name]: event.data } };
      case 'EventTypeUpdated': {
        const current = state.eventTypes[event.data.name]!;
        return { ...state, eventTypes: { ...state.eventTypes, [event.data.name]: { ...current, ...event.data } } };
      }
      default: {
        const exhaustive: never = event;
        return exhaustive;
      }
    }
  },

  decide(command, state) {
    switch (command.type) {
      case 'CreateTier':
        assertTierUnique(state, command.tier, command.tier.tier_id);
        return [{ type: 'TierCreated', data: command.tier }];
      case 'UpdateTier': {
        const current = state.tiers[command.tierId];
        if (!current) throw errors.tierNotFound(command.tierId);
        const changed = changedFields(current, command.changes);
        if (Object.keys(changed).length === 0) return [];
        assertTierUnique(state, { ...current, ...changed }, command.tierId);
        return [{ type: 'TierUpdated', data: { tier_id: command.tierId, ...changed } }];
      }
      case 'CreateEventType':
        if (state.eventTypes[command.eventType.name]) {
          throw errors.conflict(`An event type named '${command.eventType.name}' already exists.`);
        }
        return [{ type: 'EventTypeCreated', data: command.eventType }];
      case 'UpdateEventType': {
        const current = state.eventTypes[command.name];
        if (!current) throw errors.eventTypeNotFound(command.name);
        const changed = changedFields(current, command.changes);
        return Object.keys(changed).length === 0 ? [] : [{ type: 'EventTypeUpdated', data: { name: command.name, ...changed } }];
      }
      default: {
        const exhaustive: never = command;
        return exhaustive;
      }
    }
  },
};

/** Tier names (case-insensitively) and thresholds are unique within a business (CONTRACT.md §7). */
function assertTierUnique(state: ProgramState, tier: Pick<TierDefinition, 'name' | 'points_threshold'>, ownId: string) {
  for (const other of Object.values(state.tiers)) {
    if (other.tier_id === ownId) continue;
    if (other.name.toLowerCase() === tier.name.toLowerCase()) throw errors.conflict(`A tier named '${tier.name}' already exists.`);
    if (other.points_threshold === tier.points_threshold) {
      throw errors.conflict(`Tier '${other.name}' already has the threshold ${tier.points_threshold}.`);
    }
  }
}

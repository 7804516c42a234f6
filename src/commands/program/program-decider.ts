import { errors } from '../../errors.js';
import type { EventOf } from '../../events/catalogue.js';
import { DEFAULT_PROGRAM_SETTINGS, type EventTypeDefinition, type ProgramSettings, ProgramSettingsSchema, type TierDefinition } from '../../events/program-events.js';
import { changedFields } from '../changed-fields.js';
import type { Decider } from '../decider.js';

export type ProgramEvent = EventOf<'TierCreated' | 'TierUpdated' | 'EventTypeCreated' | 'EventTypeUpdated' | 'ProgramSettingsChanged'>;

type TierChanges = Partial<Omit<TierDefinition, 'tier_id'>>;
type EventTypeChanges = Partial<Omit<EventTypeDefinition, 'event_type_id' | 'name'>>;

export type ProgramCommand =
  | { type: 'CreateTier'; tier: TierDefinition }
  | { type: 'UpdateTier'; tierId: string; changes: TierChanges }
  | { type: 'CreateEventType'; eventType: EventTypeDefinition }
  | { type: 'UpdateEventType'; name: string; changes: EventTypeChanges }
  | { type: 'ChangeSettings'; changes: SettingsChanges; now: Date };

/** A PATCH of the lifecycle policy: any field, `tier_qualification` merged field by field. */
export type SettingsChanges = Partial<Omit<ProgramSettings, 'tier_qualification'>> & {
  tier_qualification?: Partial<ProgramSettings['tier_qualification']> | undefined;
};

/** A business's program: its tiers (by id), event types (by name) and lifecycle policy. */
export interface ProgramState {
  tiers: Record<string, TierDefinition>;
  eventTypes: Record<string, EventTypeDefinition>;
  settings: ProgramSettings;
  /** When the policy last changed (ISO), null while it is the default. */
  settingsChangedAt: string | null;
  /** When tier qualification's mode or window last changed (ISO): no rolling downgrade sooner than window_days after it. */
  qualificationSince: string | null;
}

/** Tiers from the lowest threshold to the highest. */
export function tiersByThreshold(state: ProgramState): TierDefinition[] {
  return Object.values(state.tiers).sort((a, b) => a.points_threshold - b.points_threshold);
}

export const programDecider: Decider<ProgramCommand, ProgramState, ProgramEvent> = {
  initialState: () => ({ tiers: {}, eventTypes: {}, settings: DEFAULT_PROGRAM_SETTINGS, settingsChangedAt: null, qualificationSince: null }),

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
      case 'ProgramSettingsChanged': {
        const { changed_at, ...settings } = event.data;
        const before = state.settings.tier_qualification;
        const after = settings.tier_qualification;
        const requalified = before.mode !== after.mode || before.window_days !== after.window_days;
        return { ...state, settings, settingsChangedAt: changed_at, qualificationSince: requalified ? changed_at : state.qualificationSince };
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
      case 'ChangeSettings': {
        const settings = mergeSettings(state.settings, command.changes);
        if (JSON.stringify(settings) === JSON.stringify(state.settings)) return [];
        return [{ type: 'ProgramSettingsChanged', data: { ...settings, changed_at: command.now.toISOString() } }];
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

/**
 * The policy after a PATCH, validated whole (CONTRACT.md §13): `rolling` needs a window_days, and
 * `lifetime` has none (a window given with it is refused rather than silently dropped).
 */
export function mergeSettings(current: ProgramSettings, changes: SettingsChanges): ProgramSettings {
  const merged = { ...current, ...definedOnly(changes), tier_qualification: { ...current.tier_qualification, ...definedOnly(changes.tier_qualification ?? {}) } };
  if (changes.tier_qualification?.mode === 'lifetime' && changes.tier_qualification.window_days === undefined) merged.tier_qualification.window_days = null;
  const parsed = ProgramSettingsSchema.safeParse(merged);
  if (!parsed.success) {
    throw errors.validation(parsed.error.issues.map((issue) => ({ path: issue.path.join('.'), message: issue.message })));
  }
  const { mode, window_days } = parsed.data.tier_qualification;
  if (mode === 'rolling' && window_days === null) {
    throw errors.validation([{ path: 'tier_qualification.window_days', message: 'rolling qualification needs a window of at least 1 day' }]);
  }
  if (mode === 'lifetime' && window_days !== null) {
    throw errors.validation([{ path: 'tier_qualification.window_days', message: 'must be null in lifetime mode' }]);
  }
  return parsed.data;
}

function definedOnly<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}

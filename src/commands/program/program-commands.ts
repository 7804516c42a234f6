import type { AnsweredEvent, CommandContext } from '../../events/metadata.js';
import type { EventTypeDefinition, ProgramSettings, TierDefinition } from '../../events/program-events.js';
import type { AppendWrite } from '../../store/event-store.js';
import { decidedWrite, type Load, loaderOf, unchangedSince } from '../aggregate.js';
import type { CommandDeps } from '../command-deps.js';
import { answeredBy, firstAppended, write, type Written } from '../write.js';
import { streams } from '../../events/streams.js';
import type { Lifecycle, LifecyclePolicy } from '../customer/customer-state.js';
import { type ProgramCommand, programDecider, type ProgramState, type SettingsChanges, tiersByThreshold } from './program-decider.js';

/** A business's program as commands need it: tiers by threshold, event types by name, the lifecycle policy. */
export interface Program {
  eventTypes: ProgramState['eventTypes'];
  tiers: TierDefinition[];
  policy: LifecyclePolicy;
  /** The condition to append with a decision made on this program: it must not have changed since. */
  unchanged: AppendWrite;
}

export async function loadProgram(load: Load, businessId: string): Promise<Program> {
  const stream = streams.program(businessId);
  const loaded = await load(stream, programDecider);
  const tiers = tiersByThreshold(loaded.state);
  return {
    eventTypes: loaded.state.eventTypes,
    tiers,
    policy: policyOf(loaded.state, tiers),
    unchanged: unchangedSince(stream, loaded),
  };
}

/** A customer decision's clock time (the command's) and the program's policy. */
export function lifecycleAt(ctx: Pick<CommandContext, 'now'>, program: Pick<Program, 'policy'>): Lifecycle {
  return { ...program.policy, now: ctx.now };
}

/** The lifecycle policy customer decisions apply. */
export function policyOf(state: ProgramState, tiers = tiersByThreshold(state)): LifecyclePolicy {
  return { settings: state.settings, qualificationSince: state.qualificationSince, tiers };
}

export type TierInput = Omit<TierDefinition, 'tier_id'>;
export type EventTypeInput = Omit<EventTypeDefinition, 'event_type_id'>;

/** The lifecycle policy as it stands, and when it last changed (null: never, the defaults). */
export interface ProgramSettingsView {
  settings: ProgramSettings;
  updatedAt: string | null;
}

export function programCommands(deps: CommandDeps) {
  /** The lifecycle policy as it stands (the defaults until first changed). */
  async function settings(businessId: string): Promise<ProgramSettingsView> {
    const { state } = await loaderOf(deps)(streams.program(businessId), programDecider);
    return { settings: state.settings, updatedAt: state.settingsChangedAt };
  }

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
    /** Changes the lifecycle policy (a merge, validated whole); returns it as it now stands. */
    async changeSettings(ctx: CommandContext, changes: SettingsChanges): Promise<ProgramSettingsView> {
      await change(ctx, { type: 'ChangeSettings', changes, now: ctx.now });
      return settings(ctx.businessId);
    },
    settings,
  };
}

export type ProgramCommands = ReturnType<typeof programCommands>;

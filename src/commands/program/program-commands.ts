import type { AnsweredEvent, CommandContext } from '../../events/metadata.js';
import type { EventTypeDefinition, ProgramSettings, TierDefinition } from '../../events/program-events.js';
import { type DecidedWrite, decidedWrite, type Load, unchangedSince } from '../aggregate.js';
import { type CommandDeps, type Decision, firstOn } from '../command-bus.js';
import { streams } from '../../events/streams.js';
import type { Lifecycle, LifecyclePolicy } from '../customer/customer-state.js';
import { type ProgramCommand, programDecider, type ProgramState, type SettingsChanges, tiersByThreshold } from './program-decider.js';

/** A business's program as commands need it: tiers by threshold, event types by name, the lifecycle policy. */
export interface Program {
  eventTypes: ProgramState['eventTypes'];
  tiers: TierDefinition[];
  policy: LifecyclePolicy;
  /** The condition to append with a decision made on this program: it must not have changed since. */
  unchanged: DecidedWrite;
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

export function programCommands({ bus, ids }: CommandDeps) {
  /** The lifecycle policy as it stands (the defaults until first changed). */
  async function settings(businessId: string): Promise<ProgramSettingsView> {
    const { state } = await bus.load(streams.program(businessId), programDecider);
    return { settings: state.settings, updatedAt: state.settingsChangedAt };
  }

  /** Decides `command` on the business's program stream (changes are serialized per business). */
  const onProgram =
    (ctx: CommandContext, command: ProgramCommand): Decision =>
    async (load) => {
      const stream = streams.program(ctx.businessId);
      const program = await load(stream, programDecider);
      return [decidedWrite(stream, program, programDecider, programDecider.decide(command, program.state))];
    };
  const change = (ctx: CommandContext) => ({ lock: [streams.program(ctx.businessId)] });
  /** A change that creates something in the program: it answers with its event. */
  const creation = (ctx: CommandContext) => ({ ...change(ctx), answer: firstOn(streams.program(ctx.businessId)) });

  return {
    /** Returns the `TierCreated`. */
    createTier(ctx: CommandContext, input: TierInput): Promise<AnsweredEvent> {
      return bus.handle(ctx, creation(ctx), onProgram(ctx, { type: 'CreateTier', tier: { tier_id: ids('tier'), ...input } }));
    },
    updateTier: (ctx: CommandContext, tierId: string, changes: Partial<TierInput>) =>
      bus.handle(ctx, change(ctx), onProgram(ctx, { type: 'UpdateTier', tierId, changes })),
    /** Returns the `EventTypeCreated`. */
    createEventType(ctx: CommandContext, input: EventTypeInput): Promise<AnsweredEvent> {
      return bus.handle(ctx, creation(ctx), onProgram(ctx, { type: 'CreateEventType', eventType: { event_type_id: ids('eventType'), ...input } }));
    },
    updateEventType: (ctx: CommandContext, name: string, changes: Partial<Omit<EventTypeInput, 'name'>>) =>
      bus.handle(ctx, change(ctx), onProgram(ctx, { type: 'UpdateEventType', name, changes })),
    /** Changes the lifecycle policy (a merge, validated whole); returns it as it now stands. */
    async changeSettings(ctx: CommandContext, changes: SettingsChanges): Promise<ProgramSettingsView> {
      await bus.handle(ctx, change(ctx), onProgram(ctx, { type: 'ChangeSettings', changes, now: ctx.now }));
      return settings(ctx.businessId);
    },
    settings,
  };
}

export type ProgramCommands = ReturnType<typeof programCommands>;

/**
 * The command side's entry point: what the edges (HTTP, CLI, composition) may use of it. Everything
 * else under `src/commands` (loading, deciding, appending, caching) is its own business.
 */
export { apiKeyCommands, type ApiKeyCommands, type CreateKeyInput } from './api-key/api-key-commands.js';
export { businessCommands, type BusinessCommands } from './business/business-commands.js';
export { PLAN_LIMITS } from './business/business-decider.js';
export { customerCommands, type CustomerCommands, type RecordPointsInput } from './customer/customer-commands.js';
export { DuplicateReference, type RecordedEvent } from './customer/customer-stream.js';
export { eventCommands, type EventCommands, type RecordEventInput } from './customer/event-commands.js';
export { redemptionCommands, type RedemptionCommands, type RedeemInput } from './customer/redemption-commands.js';
export { type AppliedDue, lifecycleCommands, type LifecycleCommands, type ReverseInput } from './customer/lifecycle-commands.js';
export { nextDueAt, plannedDowngrade } from './customer/due-work.js';
export { type CustomerState, type Lifecycle, type LifecyclePolicy } from './customer/customer-state.js';
export { policyOf } from './program/program-commands.js';
export { programCommands, type ProgramCommands, type ProgramSettingsView } from './program/program-commands.js';
export { rewardCommands, type RewardCommands } from './reward/reward-commands.js';
export { webhookCommands, type WebhookCommands, type WebhookInput } from './webhook/webhook-commands.js';
export { conditionHolds, eventPoints, rulePoints } from './program/rules.js';

import type { Clock } from '../clock.js';
import type { CommandContext } from '../events/metadata.js';

/** The command context of an operator's command: actor `cli`, no request, the time from the services' clock. */
export function cliContext(services: { clock: Clock }, businessId: string): CommandContext {
  return { businessId, actor: 'cli', requestId: null, idempotencyKey: null, now: services.clock.now() };
}

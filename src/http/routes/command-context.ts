import type { Context } from 'hono';
import type { AnsweredEvent, CommandContext } from '../../events/metadata.js';
import type { AppEnv } from '../env.js';

/**
 * Who is asking and in which request, for the metadata of the events a command writes. With
 * `answer` (the route's answer to the event the command appends, sent with `c.json`), a request
 * with an Idempotency-Key has that answer stored in the append's transaction (CONTRACT.md §5).
 */
export function commandContext(c: Context<AppEnv>, answer?: { status: number; present: (event: AnsweredEvent) => unknown }): CommandContext {
  const idempotent = c.get('idempotency');
  return {
    receipt: answer && idempotent && ((event) => idempotent.receipt(answer.status, answer.present(event))),
    earlierAttempt: answer && idempotent?.earlierAttempt,
    businessId: c.get('principal').businessId,
    actor: c.get('principal').keyId,
    requestId: c.get('requestId'),
    idempotencyKey: c.req.header('idempotency-key') ?? null,
    now: c.get('clock').now(),
  };
}

import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import type { IdGenerator } from '../ids.js';
import type { Principal } from '../projections/access/access-queries.js';
import type { Commands, Queries } from '../services.js';
import type { IdempotentRequest } from './middleware/idempotency.js';
import type { IdempotencyStore } from './middleware/idempotency-store.js';

/**
 * Hono's typed context: what middleware puts on the context (`c.set`) for the handlers after it. A
 * handler reaches the rest of the service only through these: the command handlers, the read side,
 * the clock and the id source (set once per request by `createApp`), never the stores or the
 * database. Read one with `c.get('name')`: hono's `c.var` copies every variable into a new object
 * on each access.
 */
export interface AppEnv {
  Variables: {
    requestId: string;
    principal: Principal;
    /** The command handlers (`src/commands/index.ts`): every change goes through one. */
    commands: Commands;
    /** The read side: read-model queries, and reads of the log a route answers from. */
    queries: Queries;
    /** The app's clock: command contexts and the rate limiter read the time from it. */
    clock: Clock;
    /** Where the app's new ids come from (request ids). */
    ids: IdGenerator;
    logger: Logger;
    /** Where Idempotency-Keys are claimed and answers kept (idempotency middleware). */
    idempotencyStore: IdempotencyStore;
    /** The parsed JSON request body (json-body middleware); undefined when the request has none. */
    body: unknown;
    /** True when the answer is an earlier one's, replayed under its Idempotency-Key (idempotency middleware). */
    replayed: boolean;
    /** The request's claimed Idempotency-Key (idempotency middleware); undefined without one. */
    idempotency: IdempotentRequest | undefined;
  };
}

import type { Principal } from '../projections/access/access-queries.js';
import type { Services } from '../services.js';
import type { IdempotentRequest } from './middleware/idempotency.js';

/** Hono's typed context: what middleware puts on `c.var` for the handlers after it. */
export interface AppEnv {
  Variables: {
    requestId: string;
    principal: Principal;
    services: Services;
    /** The parsed JSON request body (json-body middleware); undefined when the request has none. */
    body: unknown;
    /** The request's claimed Idempotency-Key (idempotency middleware); undefined without one. */
    idempotency: IdempotentRequest | undefined;
  };
}

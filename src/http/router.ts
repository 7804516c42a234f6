import { OpenAPIHono } from '@hono/zod-openapi';
import type { AppEnv } from './env.js';
import { validationError } from './error-response.js';

const TARGET_PREFIX: Record<string, string[]> = { query: ['query'], param: ['path'], header: ['header'] };

/** A router whose failed validations become our 400 `validation_error` (every route file uses one). */
export function createRouter() {
  return new OpenAPIHono<AppEnv>({
    defaultHook: (result) => {
      if (!result.success) throw validationError(result.error, TARGET_PREFIX[result.target] ?? []);
    },
  });
}

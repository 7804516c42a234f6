import { afterAll, expect } from 'vitest';
import { undeclaredErrorCodes } from '../../src/http/openapi/route-contract.js';

/**
 * Every test file: an error code a route answered during the file must be one its OpenAPI entry
 * lists (src/http/openapi/operations.ts), so the document's per-route `code` enums stay true.
 */
afterAll(() => {
  expect([...undeclaredErrorCodes], 'error codes answered by routes whose OpenAPI entry does not list them').toEqual([]);
});

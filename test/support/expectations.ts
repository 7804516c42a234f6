import { expect } from 'vitest';
import type { TestResponse } from './test-app.js';

/** A timestamp as the API writes them: ISO 8601, UTC, milliseconds. */
export const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** The contract's error answer: this status, this code, a message and the request id. */
export function expectError(response: TestResponse, status: number, code: string): void {
  expect(response.status, response.text).toBe(status);
  expect(response.body).toMatchObject({ code, message: expect.any(String), request_id: expect.stringMatching(/^req_/) });
}

/**
 * A transaction's or event's POST answer as the lists and duplicate answers show it: those read
 * the ledger and events read models, which do not keep a credit's `available_at` / `expires_at`
 * (the answers of the commands show both, CONTRACT.md §13). Once the read models keep them, this
 * becomes the identity.
 */
export function asListed<T extends Record<string, unknown>>(answer: T): Omit<T, 'available_at' | 'expires_at'> {
  const { available_at: _available, expires_at: _expires, ...listed } = answer;
  return listed;
}

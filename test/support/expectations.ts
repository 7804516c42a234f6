import { expect } from 'vitest';
import type { TestResponse } from './test-app.js';

/** A timestamp as the API writes them: ISO 8601, UTC, milliseconds. */
export const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** The contract's error answer: this status, this code, a message and the request id. */
export function expectError(response: TestResponse, status: number, code: string): void {
  expect(response.status, response.text).toBe(status);
  expect(response.body).toMatchObject({ code, message: expect.any(String), request_id: expect.stringMatching(/^req_/) });
}


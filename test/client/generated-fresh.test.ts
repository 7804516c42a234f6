import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLIENT_TYPES_FILE, clientTypes } from '../../scripts/openapi/client-types.js';
import { startTestApp, type TestApp } from '../support/test-app.js';

describe('the client’s generated types', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  it('are generated from the document the service serves now (else run npm run client:generate)', async () => {
    const document = (await t.request('GET', '/api/v1/openapi.json')).body;
    expect(readFileSync(CLIENT_TYPES_FILE, 'utf8')).toBe(await clientTypes(document));
  });
});

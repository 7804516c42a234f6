import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLIENT_TYPES_FILE, clientTypes } from '../../scripts/openapi/client-types.js';
import { POSTMAN_COLLECTION_FILE, postmanCollection } from '../../scripts/openapi/postman-collection.js';
import { startTestApp, type TestApp } from '../support/test-app.js';

describe('what is generated from the OpenAPI document', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  it('the client’s types are generated from the document the service serves now (else run npm run client:generate)', async () => {
    const document = (await t.request('GET', '/api/v1/openapi.json')).body;
    expect(readFileSync(CLIENT_TYPES_FILE, 'utf8')).toBe(await clientTypes(document));
  });

  it('the Postman collection in docs/ is too (else run npm run docs:generate): every operation, with its example body', async () => {
    const document = (await t.request('GET', '/api/v1/openapi.json')).body;
    const committed = readFileSync(POSTMAN_COLLECTION_FILE, 'utf8');
    expect(committed).toBe(postmanCollection(document));
    const requests = (JSON.parse(committed).item as Array<{ item: Array<{ request: { method: string; url: { raw: string }; body?: { raw: string } } }> }>).flatMap((f) => f.item);
    const operations = Object.values(document.paths as Record<string, Record<string, unknown>>).flatMap((methods) => Object.keys(methods));
    expect(requests).toHaveLength(operations.length);
    const earn = requests.find((r) => r.request.method === 'POST' && r.request.url.raw === '{{baseUrl}}/api/v1/customers/:customer_id/points/transaction')!;
    expect(JSON.parse(earn.request.body!.raw)).toMatchObject({ type: 'earn', amount: expect.any(Number) });
  });
});

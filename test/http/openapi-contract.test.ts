import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERROR_CODES } from '../../src/error-codes.js';
import { WEBHOOK_EVENT_TYPES } from '../../src/events/webhook-events.js';
import { startTestApp, type TestApp } from '../support/test-app.js';

type Doc = any;
const WRITES = ['post', 'patch', 'delete'];

/** Follows a local `$ref` in the document. */
function resolve(doc: Doc, node: any): any {
  if (!node?.$ref) return node;
  return (node.$ref as string).slice(2).split('/').reduce((at: any, key: string) => at[key.replace(/~1/g, '/')], doc);
}

function operations(doc: Doc): Array<{ name: string; method: string; op: any }> {
  return Object.entries(doc.paths as Record<string, Record<string, any>>).flatMap(([path, item]) =>
    Object.entries(item).map(([method, op]) => ({ name: `${method.toUpperCase()} ${path}`, method, op })),
  );
}

/** The `code` values an error response allows: the union's members' constants. */
function codesOf(doc: Doc, response: any): string[] {
  const schema = resolve(doc, response.content['application/json'].schema);
  const members = schema.oneOf ?? [schema];
  return members.map((m: any) => literalOf(resolve(doc, m).properties.code));
}

/** A schema's one allowed value (`const`, or a one-value `enum`). */
const literalOf = (schema: any) => schema.const ?? (schema.enum?.length === 1 ? schema.enum[0] : undefined);

describe('the OpenAPI document is the whole contract', () => {
  let t: TestApp;
  let doc: Doc;
  beforeAll(async () => {
    t = await startTestApp();
    doc = (await t.request('GET', '/api/v1/openapi.json')).body;
  });
  afterAll(() => t.close());

  it('declares Idempotency-Key on every POST, PATCH and DELETE, and on nothing else', () => {
    for (const { name, method, op } of operations(doc)) {
      const names = (op.parameters ?? []).map((p: any) => resolve(doc, p).name);
      expect(names.includes('Idempotency-Key'), name).toBe(WRITES.includes(method));
    }
    expect(doc.components.parameters.IdempotencyKey).toMatchObject({ in: 'header', schema: { maxLength: 255 } });
  });

  it('describes the headers every answer carries, Link on lists, Idempotent-Replayed on writes and Retry-After where a retry is invited', () => {
    for (const { name, method, op } of operations(doc)) {
      for (const [status, response] of Object.entries(op.responses as Record<string, any>)) {
        const headers = Object.keys(response.headers ?? {});
        expect(headers, `${name} ${status}`).toContain('X-Request-Id');
        if (Number(status) < 300 && WRITES.includes(method)) expect(headers, `${name} ${status}`).toContain('Idempotent-Replayed');
        if (['429', '503'].includes(status)) expect(headers, `${name} ${status}`).toContain('Retry-After');
        if (status === '429') expect(headers).toEqual(expect.arrayContaining(['RateLimit', 'RateLimit-Policy']));
      }
      const paginated = (op.parameters ?? []).some((p: any) => resolve(doc, p).name === 'starting_after');
      expect('Link' in (op.responses['200']?.headers ?? {}), name).toBe(paginated && op.responses['200'] !== undefined);
    }
  });

  it('lists on every operation the 429, 500 and 503 answers, and 413/415 on writes, with `code` an enum of what that route can answer', () => {
    for (const { name, method, op } of operations(doc)) {
      const statuses = Object.keys(op.responses);
      expect(statuses, name).toEqual(expect.arrayContaining(['400', '401', '403', '413', '429', '500', '503']));
      if (WRITES.includes(method)) expect(statuses, name).toContain('415');
      for (const status of statuses.filter((s) => Number(s) >= 400)) {
        const codes = codesOf(doc, op.responses[status]);
        expect(codes.length, `${name} ${status}`).toBeGreaterThan(0);
        for (const code of codes) expect(ERROR_CODES[code as keyof typeof ERROR_CODES].status, `${name} ${status} ${code}`).toBe(Number(status));
      }
    }
    const earn = doc.paths['/api/v1/customers/{customer_id}/points/transaction'].post;
    expect(codesOf(doc, earn.responses['409'])).toEqual(['duplicate_transaction', 'conflict', 'idempotency_key_in_progress']);
    expect(codesOf(doc, earn.responses['422'])).toEqual(['insufficient_points', 'points_out_of_range', 'idempotency_key_reused']);
    expect(codesOf(doc, doc.paths['/api/v1/customers/{customer_id}'].get.responses['404'])).toEqual(['customer_not_found']);
  });

  it('types the extras of the errors that carry them', () => {
    const schemas = doc.components.schemas;
    expect(resolve(doc, schemas.DuplicateTransactionError.properties.transaction.allOf[0])).toMatchObject({ properties: { balance: { type: 'integer' } } });
    expect(schemas.CustomerExistsError.properties.customer_id.type).toBe('string');
    expect(schemas.InsufficientPointsError.properties.balance.type).toBe('integer');
    expect(schemas.ValidationErrorError.properties.details.type).toBe('array');
  });

  it('gives every operation a description, a tag defined at the top, and an example for its body and its answer', () => {
    const tags = new Set(doc.tags.map((tag: any) => tag.name));
    for (const { name, op } of operations(doc)) {
      expect(op.description?.length, name).toBeGreaterThan(20);
      expect(tags.has(op.tags[0]), name).toBe(true);
      const body = op.requestBody?.content['application/json'].schema;
      if (body) expect(resolve(doc, body).example, `${name} request`).toBeDefined();
      const [, success] = Object.entries(op.responses as Record<string, any>).find(([s]) => Number(s) < 300)!;
      const schema = resolve(doc, success.content['application/json'].schema);
      expect(schema.example ?? resolve(doc, schema.items)?.example, `${name} answer`).toBeDefined();
    }
    for (const tag of doc.tags) expect(tag.description, tag.name).toBeTruthy();
  });

  it('describes every webhook event type under `webhooks`, with its payload schema and an example', () => {
    expect(Object.keys(doc.webhooks).sort()).toEqual([...WEBHOOK_EVENT_TYPES].sort());
    for (const type of WEBHOOK_EVENT_TYPES) {
      const content = doc.webhooks[type].post.requestBody.content['application/json'];
      expect(literalOf(resolve(doc, content.schema).properties.type)).toBe(type);
      expect(content.example).toMatchObject({ type, data: expect.any(Object) });
    }
  });

  it('names a licence and an absolute server, so a generated client has a base URL', () => {
    expect(doc.info.license.name).toBeTruthy();
    expect(doc.servers[0].url).toMatch(/^https?:\/\/[^/]+$/);
  });

  it('uses enums for closed sets of strings', () => {
    const schemas = doc.components.schemas;
    expect(schemas.CustomerSummary.properties.recent_activity.items.properties.type.enum).toContain('redemption_cancelled');
    expect(schemas.ApiKey.properties.permissions.items.enum).toContain('keys:write');
    expect(schemas.Webhook.properties.events.items.enum).toContain('*');
    expect(schemas.WebhookDelivery.properties.event_type.enum).toContain('webhook.test');
  });
});

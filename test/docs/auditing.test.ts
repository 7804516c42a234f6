import { readFileSync, writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/test-app.js';

/** The verification code in docs/auditing.md, exactly as an auditor would copy it. */
async function documentedVerifier(): Promise<(customerId: string, events: unknown[]) => { ok: boolean; position?: number; lastHash?: string }> {
  const doc = readFileSync(new URL('../../docs/auditing.md', import.meta.url), 'utf8');
  const code = /```js\n([\s\S]*?)```/.exec(doc)?.[1];
  if (!code) throw new Error('docs/auditing.md has no js block');
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'audit-doc-')), 'verify.mjs');
  writeFileSync(file, code);
  return (await import(pathToFileURL(file).href)).verifyStream;
}

describe('auditing a stream as docs/auditing.md shows', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  it('verifies the hash chain of a real stream, and finds the position of any edit', async () => {
    const { private_key: key } = await t.business();
    const customer = await t.request('POST', '/api/v1/customers', { key, body: { email: 'audit@example.com' } });
    const id = customer.body.id as string;
    for (const [type, amount] of [['earn', 100], ['deduct', 30], ['adjust', -5], ['earn', 12]] as const) {
      expect((await t.request('POST', `/api/v1/customers/${id}/points/transaction`, { key, body: { type, amount } })).status).toBe(201);
    }
    await t.request('PATCH', `/api/v1/customers/${id}`, { key, body: { first_name: 'Ada' } });
    const events = (await t.request('GET', `/api/v1/customers/${id}/stream`, { key })).body as Array<{ position: number; data: Record<string, unknown> }>;
    expect(events).toHaveLength(6);

    const verify = await documentedVerifier();
    const result = verify(id, events);
    expect(result.ok).toBe(true);
    expect(result.lastHash).toMatch(/^[0-9a-f]{64}$/);

    const edited = structuredClone(events);
    edited[2]!.data.amount = 3;
    expect(verify(id, edited)).toEqual({ ok: false, position: 2 });
    expect(verify(id, [events[0], events[2], events[1]])).toMatchObject({ ok: false, position: 2 });
    expect(verify(id, events.slice(1))).toMatchObject({ ok: false, position: 1 });
  });
});

import type { AddressInfo } from 'node:net';
import { type ServerType, serve } from '@hono/node-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createLoyaltyClient,
  idempotently,
  listAll,
  LoyaltyApiError,
  type LoyaltyClient,
  unwrap,
  webhookVerifier,
} from '../../client/src/index.js';
import { startReceiver } from '../support/webhook-receiver.js';
import { startTestApp, type TestApp } from '../support/test-app.js';

/** The app on a real port, so the client talks HTTP to the service as any integrator's would. */
async function listen(t: TestApp): Promise<{ url: string; server: ServerType }> {
  return new Promise((resolve) => {
    const server = serve({ fetch: t.app.fetch, hostname: '127.0.0.1', port: 0 }, (info: AddressInfo) =>
      resolve({ url: `http://127.0.0.1:${info.port}`, server }),
    );
  });
}

describe('the typed client against the running service', () => {
  let t: TestApp;
  let server: ServerType;
  let baseUrl: string;
  let api: LoyaltyClient;
  let statuses: number[] = [];
  const countingFetch: typeof fetch = async (input, init) => {
    const response = await fetch(input, init);
    statuses.push(response.status);
    return response;
  };

  beforeAll(async () => {
    t = await startTestApp({ config: { webhookAllowPrivate: true, rateLimitRps: 2, rateLimitBurst: 40 } });
    ({ url: baseUrl, server } = await listen(t));
    const { private_key } = await t.business();
    api = createLoyaltyClient({ baseUrl, apiKey: private_key, fetch: countingFetch });
  });
  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
    await t.close();
  });

  it('writes once under one Idempotency-Key: a second send of the same operation is a replay', async () => {
    const customer = await unwrap(api.POST('/api/v1/customers', { body: { email: 'client-ada@example.com', first_name: 'Ada' } }));
    const key = `earn-${customer.id}`;
    const earn = () =>
      api.POST('/api/v1/customers/{customer_id}/points/transaction', {
        params: { path: { customer_id: customer.id }, header: { 'Idempotency-Key': key } },
        body: { type: 'earn', amount: 120, reference: 'order-1' },
      });
    const first = await idempotently(() => unwrap(earn()), { key });
    const again = await earn();
    expect(again.response.headers.get('Idempotent-Replayed')).toBe('true');
    expect(again.data).toEqual(first);
    expect(first.balance).toBe(120);
  });

  it('throws typed errors: the code narrows the body to its extras', async () => {
    const customer = await unwrap(api.POST('/api/v1/customers', { body: { email: 'client-typed@example.com' } }));
    const debit = api.POST('/api/v1/customers/{customer_id}/points/transaction', {
      params: { path: { customer_id: customer.id } },
      body: { type: 'deduct', amount: 5 },
    });
    const error = await unwrap(debit).catch((e: unknown) => e);
    // As an integrator writes it: narrowed by instanceof and by code, no casts.
    if (!(error instanceof LoyaltyApiError)) throw new Error(`expected a LoyaltyApiError, got ${String(error)}`);
    const body = error.body;
    if (body.code !== 'insufficient_points') throw new Error(`expected insufficient_points, got ${body.code}`);
    expect(body.balance).toBe(0);

    const { error: taken } = await api.POST('/api/v1/customers', { body: { email: 'client-typed@example.com' } });
    expect(taken?.code).toBe('customer_exists');
    if (taken?.code === 'customer_exists') expect(taken.customer_id).toBe(customer.id);
  });

  it('walks every page of a list by following Link', async () => {
    const customer = await unwrap(api.POST('/api/v1/customers', { body: { email: 'client-pages@example.com' } }));
    for (let i = 1; i <= 5; i++) {
      await unwrap(api.POST('/api/v1/customers/{customer_id}/points/transaction', {
        params: { path: { customer_id: customer.id } },
        body: { type: 'earn', amount: i },
      }));
    }
    const lines = [];
    for await (const line of listAll(api, '/api/v1/customers/{customer_id}/transactions', { path: { customer_id: customer.id }, query: { limit: 2 } })) {
      lines.push(line);
    }
    expect(lines.map((line) => line.amount)).toEqual([1, 2, 3, 4, 5]);
    expect(lines.at(-1)?.balance).toBe(15);
  });

  it('waits out a 429 for as long as Retry-After says, then succeeds', async () => {
    const { private_key } = await t.business();
    const limited = createLoyaltyClient({ baseUrl, apiKey: private_key, fetch: countingFetch, retry: { attempts: 20 } });
    statuses = [];
    const started = Date.now();
    // A burst of 40 refilled at 2 per second: 48 at once cannot all pass at first.
    const answers = await Promise.all(Array.from({ length: 48 }, () => limited.GET('/api/v1/tiers')));
    expect(answers.map((answer) => answer.response.status)).toEqual(Array(48).fill(200));
    expect(statuses).toContain(429);
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
  });

  it('verifies a webhook and types its message by event type', async () => {
    const receiver = await startReceiver();
    try {
      const webhook = await unwrap(api.POST('/api/v1/webhooks', { body: { url: receiver.url, events: ['customer.created'] } }));
      const verify = webhookVerifier(webhook.secret!);
      await unwrap(api.POST('/api/v1/customers', { body: { email: 'client-hook@example.com' } }));
      await expect.poll(() => receiver.received.length, { timeout: 10_000 }).toBeGreaterThan(0);
      const [delivery] = receiver.received;
      const message = verify(delivery!.body, delivery!.headers);
      if (message.type !== 'customer.created') throw new Error(`unexpected ${message.type}`);
      expect(message.data.email).toBe('client-hook@example.com');
      expect(() => verify(delivery!.body.replace('client-hook', 'forged'), delivery!.headers)).toThrow();
    } finally {
      await receiver.close();
    }
  });
});

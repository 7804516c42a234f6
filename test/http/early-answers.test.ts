import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { serve } from '@hono/node-server';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ProvisionedBusiness } from '../../src/cli/provision.js';
import { startTestApp, type TestApp } from '../support/test-app.js';

/**
 * An answer given before the request body is read (413, 415, 401) must leave the connection
 * usable, or closed: the next request a keep-alive client sends on it is answered either way.
 */
describe('early answers on a keep-alive connection', () => {
  let t: TestApp;
  let biz: ProvisionedBusiness;
  let server: ReturnType<typeof serve>;
  let baseUrl: string;

  beforeAll(async () => {
    t = await startTestApp();
    biz = await t.business();
    server = serve({ fetch: t.app.fetch, port: 0, hostname: '127.0.0.1' });
    await new Promise((resolve) => server.once('listening', resolve));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
    await t.close();
  });

  it('answers the next request after a 413, a 415 and a 401 sent with large bodies', async () => {
    // one connection, so every request after an early answer goes where that answer went
    const agent = new Agent({ connections: 1, keepAliveTimeout: 30_000 });
    const body = (size: number) => JSON.stringify({ email: 'big@example.com', metadata: { pad: 'x'.repeat(size) } });
    const early = [
      { headers: { 'x-api-key': biz.private_key, 'content-type': 'application/json' }, body: body(300_000), status: 413 },
      { headers: { 'x-api-key': biz.private_key, 'content-type': 'text/plain' }, body: body(60_000), status: 415 },
      { headers: { 'content-type': 'application/json' }, body: body(60_000), status: 401 },
    ];
    const seen: number[] = [];
    for (let round = 0; round < 10; round++) {
      for (const { headers, body, status } of early) {
        const refused = await request(`${baseUrl}/api/v1/customers`, { method: 'POST', headers, body, dispatcher: agent });
        await refused.body.text();
        expect(refused.statusCode).toBe(status);
        const next = await request(`${baseUrl}/api/v1/tiers`, { headers: { 'x-api-key': biz.private_key }, dispatcher: agent });
        await next.body.text();
        seen.push(next.statusCode);
      }
    }
    await agent.close();
    expect(seen).toEqual(Array(30).fill(200));
  });

  it('counts a chunked body (no Content-Length) as it streams in: over the limit 413, under it read', async () => {
    const agent = new Agent({ connections: 1, keepAliveTimeout: 30_000 });
    const chunked = (text: string) => Readable.from([Buffer.from(text.slice(0, 10)), Buffer.from(text.slice(10))]);
    const send = async (text: string) => {
      const res = await request(`${baseUrl}/api/v1/customers`, {
        method: 'POST',
        headers: { 'x-api-key': biz.private_key, 'content-type': 'application/json' },
        body: chunked(text),
        dispatcher: agent,
      });
      return { status: res.statusCode, body: (await res.body.json()) as { code?: string; email?: string } };
    };
    const big = await send(JSON.stringify({ email: 'chunked-big@example.com', metadata: { pad: 'x'.repeat(70_000) } }));
    expect(big).toMatchObject({ status: 413, body: { code: 'payload_too_large' } });
    const small = await send(JSON.stringify({ email: 'chunked@example.com' }));
    expect(small).toMatchObject({ status: 201, body: { email: 'chunked@example.com' } });
    await agent.close();
  });
});

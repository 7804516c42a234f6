import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, request as httpRequest, type IncomingMessage, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { getRequestListener } from '@hono/node-server';
import { Hono } from 'hono';
import { Agent, request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { affinitySocket, customerWritten, ownerOf, type PassedOutcome, passingOnWrites } from '../../src/cluster/customer-affinity.js';
import { MAX_BODY_BYTES } from '../../src/http/middleware/body-size.js';

/**
 * The passing on of writes between a cluster's HTTP children (customer-affinity.ts), over real
 * sockets: a front server wraps an app (hono through @hono/node-server, as in `serve`) with
 * `passingOnWrites`, and the owner is another such app on a Unix socket. Each app answers with
 * who it is and the body it read, so every test sees which process answered and with what.
 * The whole instance, over real processes, is in test/e2e/cluster.test.ts.
 */

const servers: Server[] = [];
const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** An app that says who answered, and echoes the body it read (as hono reads it: the passed-on one, or `rawBody`). */
function app(name: string): RequestListener {
  const hono = new Hono();
  hono.all('*', async (c) => {
    const body = c.req.method === 'GET' ? '' : await c.req.text();
    const answer = c.json({ by: name, method: c.req.method, path: c.req.path, body, key: c.req.header('x-api-key') ?? null }, 201);
    if (c.req.header('x-close') === 'yes') answer.headers.set('Connection', 'close');
    return answer;
  });
  return getRequestListener(hono.fetch);
}

function listen(server: Server, where: number | string): Promise<Server> {
  servers.push(server);
  return new Promise((resolve) => server.listen(where, () => resolve(server)));
}

/** A customer id that hashes to child `index` of 2. */
function customerOwnedBy(index: number): string {
  for (let n = 0; ; n++) if (ownerOf(`cus_${n}`, 2) === index) return `cus_${n}`;
}

/** The front (child 0 of 2) and, unless `ownerUp` is false, the owner of the other half (child 1) on its socket. */
async function instance(options: { ownerUp?: boolean; owner?: RequestListener } = {}) {
  const dir = mkdtempSync(path.join(tmpdir(), 'affinity-'));
  dirs.push(dir);
  const socketOf = (i: number) => path.join(dir, `child-${i}.sock`);
  if (options.ownerUp !== false) await listen(createServer(options.owner ?? app('owner')), socketOf(1));
  const outcomes: PassedOutcome[] = [];
  const listener = passingOnWrites(app('front'), { index: 0, size: 2, socketOf, passing: () => true, passed: (o) => outcomes.push(o) });
  const front = await listen(createServer(listener), 0);
  const base = `http://127.0.0.1:${(front.address() as AddressInfo).port}`;
  const agent = new Agent({ connections: 1 });
  const send = async (method: string, urlPath: string, body?: string | Readable, headers: Record<string, string> = {}) => {
    const response = await request(`${base}${urlPath}`, { method: method as 'POST', dispatcher: agent, body, headers: { 'x-api-key': 'sk_test', ...headers } });
    const text = await response.body.text();
    return { status: response.statusCode, headers: response.headers, body: text ? JSON.parse(text) : undefined };
  };
  return { base, send, outcomes, close: async () => (await agent.close(), await listener.close()) };
}

describe('which requests a child passes on', () => {
  it('writes under /api/v1/customers/{id}, never reads', () => {
    expect(customerWritten('POST', '/api/v1/customers/cus_1/points/transaction')).toBe('cus_1');
    expect(customerWritten('PATCH', '/api/v1/customers/cus_1')).toBe('cus_1');
    expect(customerWritten('POST', '/api/v1/customers/cus_1/redemptions?x=1')).toBe('cus_1');
    expect(customerWritten('GET', '/api/v1/customers/cus_1')).toBeUndefined();
    expect(customerWritten('HEAD', '/api/v1/customers/cus_1')).toBeUndefined();
    expect(customerWritten('OPTIONS', '/api/v1/customers/cus_1')).toBeUndefined();
    expect(customerWritten('POST', '/api/v1/customers')).toBeUndefined(); // a new customer: no owner yet
    expect(customerWritten('POST', '/api/v1/rewards')).toBeUndefined();
  });

  it('passes nothing on where the temporary directory is too long for a socket path (the kernel would cut every child\'s to one)', () => {
    const saved = process.env.TMPDIR;
    try {
      process.env.TMPDIR = '/tmp';
      expect(affinitySocket('4242', 1)).toBe('/tmp/loyalty-4242-1.sock');
      process.env.TMPDIR = `/tmp/${'d'.repeat(90)}`;
      expect(affinitySocket('4242', 1)).toBeUndefined();
    } finally {
      if (saved === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = saved;
    }
  });

  it('spreads customers evenly and the same way in every child', () => {
    const counts = [0, 0, 0];
    for (let n = 0; n < 30_000; n++) counts[ownerOf(`cus_${n.toString(36)}`, 3)]!++;
    for (const c of counts) expect(c).toBeGreaterThan(9_000);
    expect(ownerOf('cus_abc', 3)).toBe(ownerOf('cus_abc', 3));
  });
});

describe('a write owned by another child', () => {
  it('is answered by the owner with the body, headers and status as sent; a read, and a write it owns, by the child asked', async () => {
    const front = await instance();
    const theirs = customerOwnedBy(1);
    const body = JSON.stringify({ type: 'earn', amount: 5, note: 'é ✓' });
    const passed = await front.send('POST', `/api/v1/customers/${theirs}/points/transaction`, body, { 'content-type': 'application/json' });
    expect(passed).toMatchObject({ status: 201, body: { by: 'owner', method: 'POST', path: `/api/v1/customers/${theirs}/points/transaction`, body, key: 'sk_test' } });
    expect((await front.send('GET', `/api/v1/customers/${theirs}`)).body.by).toBe('front');
    const mine = customerOwnedBy(0);
    expect((await front.send('POST', `/api/v1/customers/${mine}/points/transaction`, body)).body.by).toBe('front');
    expect(front.outcomes).toEqual(['answered']);
    await front.close();
  });

  it('is made by the child asked when the owner is not listening (a child restarting), its body intact', async () => {
    const front = await instance({ ownerUp: false });
    const body = JSON.stringify({ type: 'earn', amount: 7 });
    const answer = await front.send('POST', `/api/v1/customers/${customerOwnedBy(1)}/points/transaction`, body);
    expect(answer).toMatchObject({ status: 201, body: { by: 'front', body } });
    expect(front.outcomes).toEqual(['made_here']);
    await front.close();
  });

  it('answers 503 unavailable when the owner goes away after receiving it (whether it was made is unknown)', async () => {
    const dying: RequestListener = (req: IncomingMessage) => req.socket.destroy();
    const front = await instance({ owner: dying });
    const answer = await front.send('POST', `/api/v1/customers/${customerOwnedBy(1)}/points/transaction`, '{}');
    expect(answer.status).toBe(503);
    expect(answer.body).toMatchObject({ code: 'unavailable' });
    expect(answer.headers['retry-after']).toBe('1');
    expect(front.outcomes).toEqual(['unknown']);
    await front.close();
  });

  it('passes on the owner asking to close the connection, and a body sent after 100 Continue; a body over the limit or chunked is answered by the child asked', async () => {
    const front = await instance();
    const theirs = customerOwnedBy(1);
    const closing = await front.send('POST', `/api/v1/customers/${theirs}/points/transaction`, '{}', { 'x-close': 'yes' });
    expect(closing.body.by).toBe('owner');
    expect(closing.headers.connection).toBe('close');
    // A client that asked to be told to go on (curl does for larger bodies) has been, here.
    const continued = await new Promise<{ status: number; body: any }>((resolve, reject) => {
      const req = httpRequest(`${front.base}/api/v1/customers/${theirs}/points/transaction`, {
        method: 'POST',
        headers: { expect: '100-continue', 'content-length': 7, 'x-api-key': 'sk_test' },
      });
      req.once('continue', () => req.end('{"a":1}'));
      req.once('response', (res) => {
        let text = '';
        res.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
        res.once('end', () => resolve({ status: res.statusCode!, body: JSON.parse(text) }));
      });
      req.once('error', reject);
    });
    expect(continued).toMatchObject({ status: 201, body: { by: 'owner', body: '{"a":1}' } });
    const huge = 'x'.repeat(MAX_BODY_BYTES + 1);
    expect((await front.send('POST', `/api/v1/customers/${theirs}/points/transaction`, huge)).body.by).toBe('front');
    const chunked = await front.send('POST', `/api/v1/customers/${theirs}/points/transaction`, Readable.from(['{"type":', '"earn"}']));
    expect(chunked.body).toMatchObject({ by: 'front', body: '{"type":"earn"}' });
    expect(front.outcomes).toEqual(['answered', 'answered']);
    await front.close();
  });
});

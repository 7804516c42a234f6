import { createServer, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, it, type TestContext } from 'vitest';
import {
  api,
  expectedBacklog,
  exitWithin,
  freshStore,
  killProcess,
  listenBacklog,
  printedKeys,
  type ProcessStore,
  runCli,
  type ServerProcess,
  startServer,
  untilRefused,
} from './process-helpers.js';
import { rawRequest } from '../support/raw-http.js';

/**
 * A fresh store for one test and a way to start servers on it; once the test is over, the servers
 * it started are killed and the store is dropped. `migrated`: see `freshStore`.
 */
async function newStore({ onTestFinished }: TestContext, { migrated = true } = {}) {
  const store: ProcessStore = await freshStore({ migrated });
  const servers: ServerProcess[] = [];
  onTestFinished(async () => {
    await Promise.all(servers.map((server) => killProcess(server.child)));
    await store.dispose();
  });
  const start = async () => {
    const server = await startServer(store);
    servers.push(server);
    return server;
  };
  return { start };
}

/**
 * A POST whose headers have reached the server and whose body is held back until `finish()`:
 * a request that is provably in flight. `Expect: 100-continue` makes the server answer
 * "100 Continue" only once it has parsed the headers and started handling the request.
 */
function requestHeldOpen(port: number, path: string, key: string, body: unknown) {
  const payload = Buffer.from(JSON.stringify(body));
  const req = httpRequest({
    host: '127.0.0.1',
    port,
    method: 'POST',
    path,
    agent: false,
    headers: {
      'x-api-key': key,
      'content-type': 'application/json',
      'content-length': payload.length,
      expect: '100-continue',
    },
  });
  const started = new Promise<void>((resolve) => req.once('continue', resolve));
  const response = new Promise<{ status: number; body: any }>((resolve, reject) => {
    req.once('error', reject);
    req.once('response', (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (s: string) => (text += s));
      res.once('end', () => resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : undefined }));
    });
  });
  req.flushHeaders();
  return { started, response, finish: () => req.end(payload) };
}

describe('the server process', () => {
  it('prints a private and a public key on its first start, and none when started again on the same store', async (context) => {
    const { expect } = context;
    // A store's very first start (no data directory yet): not from the migrated copy.
    const { start } = await newStore(context, { migrated: false });
    const first = await start();
    const keys = printedKeys(first.stdout);
    expect(keys.privateKey).toMatch(/^sk_live_[A-Za-z0-9]{32,}$/);
    expect(keys.publicKey).toMatch(/^pk_live_[A-Za-z0-9]{32,}$/);
    // Printed once: each key appears a single time.
    expect(first.stdout.split(keys.privateKey!).length - 1).toBe(1);
    // The kernel holds a burst of new connections rather than dropping them (src/cli/listen.ts).
    expect(listenBacklog(first.port)).toBe(expectedBacklog());
    expect(first.stdout.split(keys.publicKey!).length - 1).toBe(1);

    first.signal('SIGTERM');
    expect(await exitWithin(first, 10_000)).toEqual({ code: 0, signal: null });

    const second = await start();
    expect(second.stdout).toContain('Listening on');
    expect(second.stdout).not.toMatch(/sk_live_|pk_live_/);
    // The store kept its business: the keys of the first start still work.
    const customers = await api(second.baseUrl, 'GET', '/api/v1/customers', { key: keys.privateKey! });
    expect(customers.status).toBe(200);
    expect(customers.body).toEqual([]);
    const viaPublicKey = await api(second.baseUrl, 'GET', '/api/v1/tiers', { key: keys.publicKey! });
    expect(viaPublicKey.status).toBe(200);
  }, 120_000);

  it('says in one line that the port is taken and exits 1, without a stack trace or a business made, when another process listens on PORT', async ({ onTestFinished, expect }) => {
    const store = await freshStore();
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    onTestFinished(async () => {
      await new Promise((resolve) => taken.close(resolve));
      await store.dispose();
    });
    const port = (taken.address() as AddressInfo).port;
    const run = await runCli(['serve'], { env: { ...store.env, PORT: String(port), HOST: '127.0.0.1', LOYALTY_PROCESSES: '1' }, dispose: async () => {} });
    expect([run.code, run.stderr.trim()]).toEqual([1, `loyalty: Cannot listen on 127.0.0.1:${port}: another process is listening there. Stop it, or set PORT to a free port.`]);
    // It made nothing: the first start that listens creates the first business and prints its keys.
    expect(run.stdout).not.toMatch(/sk_live_/);
    const server = await startServer(store);
    onTestFinished(async () => void (await killProcess(server.child)));
    expect(printedKeys(server.stdout).privateKey).toMatch(/^sk_live_/);
  }, 60_000);

  it('serves the quick start over real HTTP: customer, earn, duplicate reference, summary', async (context) => {
    const { expect } = context;
    const server = await (await newStore(context)).start();
    const { privateKey: key } = printedKeys(server.stdout);
    expect(key).toBeDefined();
    const call = (method: string, path: string, body?: unknown) => api(server.baseUrl, method, path, { key: key!, body });

    // 1. Create a customer.
    const customer = await call('POST', '/api/v1/customers', { email: 'ada@example.com', first_name: 'Ada' });
    expect(customer.status).toBe(201);
    expect(customer.body).toMatchObject({ email: 'ada@example.com', points_balance: 0, tier: null });
    const id: string = customer.body.id;

    // 2. Award points for an order, with the order number as the reference.
    const earn = { type: 'earn', amount: 120, description: 'Order #1001', reference: 'order-1001' };
    const awarded = await call('POST', `/api/v1/customers/${id}/points/transaction`, earn);
    expect(awarded.status).toBe(201);
    expect(awarded.body).toMatchObject({ customer_id: id, type: 'earn', amount: 120, balance: 120, reference: 'order-1001' });
    expect(awarded.body.id).toMatch(/^txn_/);

    // 3. The same order again (a retried webhook, a double click): refused, with the original.
    const again = await call('POST', `/api/v1/customers/${id}/points/transaction`, earn);
    expect(again.status).toBe(409);
    expect(again.body.code).toBe('duplicate_transaction');
    expect(again.body.request_id).toMatch(/^req_/);
    expect(again.body.transaction).toEqual(awarded.body);

    // 4. Spend some.
    const spent = await call('POST', `/api/v1/customers/${id}/points/transaction`, {
      type: 'deduct',
      amount: 20,
      description: 'Coffee',
    });
    expect(spent.status).toBe(201);
    expect(spent.body.balance).toBe(100);

    // 5. The summary counts the order once.
    const summary = await call('GET', `/api/v1/customers/${id}/summary`);
    expect(summary.status).toBe(200);
    expect(summary.body.customer).toMatchObject({ id, email: 'ada@example.com', first_name: 'Ada' });
    expect(summary.body.points).toEqual({ balance: 100, lifetime_earned: 120, lifetime_redeemed: 20, pending: 0, lifetime_expired: 0, next_expiring: null });
    expect(summary.body.recent_activity.map((a: { type: string; amount: number }) => [a.type, a.amount])).toEqual([
      ['deduct', 20],
      ['earn', 120],
    ]);
  }, 120_000);

  it('answers requests its HTTP parser refuses with JSON errors and a request id: 431 for a 20 KB header, 400 for broken framing', async (context) => {
    const { expect } = context;
    const server = await (await newStore(context)).start();
    const cases = [
      { bytes: `GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Padding: ${'a'.repeat(20 * 1024)}\r\n\r\n`, status: 431, code: 'headers_too_large' },
      { bytes: 'POST /api/v1/customers HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n', status: 400, code: 'bad_request' },
    ];
    for (const { bytes, status, code } of cases) {
      const response = await rawRequest(server.port, bytes);
      expect(response.status).toBe(status);
      expect(response.headers['content-type']).toBe('application/json');
      const body = JSON.parse(response.body);
      expect(body).toEqual({ code, message: expect.any(String), request_id: expect.stringMatching(/^req_/) });
      expect(response.headers['x-request-id']).toBe(body.request_id);
      expect(response.closed).toBe(true);
    }
    // And the process serves on.
    expect((await api(server.baseUrl, 'GET', '/healthz')).status).toBe(200);
  }, 120_000);

  it('exits with code 0 on SIGTERM after finishing the request in flight, whose write survives a restart', async (context) => {
    const { expect } = context;
    const { start } = await newStore(context);
    const first = await start();
    const { privateKey: key } = printedKeys(first.stdout);
    const customer = await api(first.baseUrl, 'POST', '/api/v1/customers', { key: key!, body: { email: 'late@example.com' } });
    expect(customer.status).toBe(201);
    const id: string = customer.body.id;

    const inFlight = requestHeldOpen(first.port, `/api/v1/customers/${id}/points/transaction`, key!, {
      type: 'earn',
      amount: 7,
      reference: 'in-flight',
    });
    await inFlight.started;

    first.signal('SIGTERM');
    // The server has stopped accepting connections while the held request is still open.
    await untilRefused(first.port);
    inFlight.finish();

    const answered = await inFlight.response;
    expect(answered.status).toBe(201);
    expect(answered.body).toMatchObject({ customer_id: id, amount: 7, balance: 7, reference: 'in-flight' });
    expect(await exitWithin(first, 10_000)).toEqual({ code: 0, signal: null });

    const second = await start();
    const ledger = await api(second.baseUrl, 'GET', `/api/v1/customers/${id}/transactions`, { key: key! });
    expect(ledger.body.map((t: { id: string }) => t.id)).toEqual([answered.body.id]);
    const after = await api(second.baseUrl, 'GET', `/api/v1/customers/${id}`, { key: key! });
    expect(after.body.points_balance).toBe(7);
  }, 120_000);
});

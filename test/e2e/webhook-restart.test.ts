import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { describe, it, vi } from 'vitest';
import { api, exitWithin, freshStore, killProcess, printedKeys, type ProcessStore, SERVER_MODE, type ServerProcess, startServer } from './process-helpers.js';

interface Received {
  headers: Record<string, string>;
  body: string;
}

/**
 * A real receiver on 127.0.0.1 that starts out failing: either it drops every connection before
 * any HTTP answer (as if down; the port stays ours) or it answers 500. `recover()` makes it answer 200.
 */
async function startReceiver(failure: 'drops connections' | 'answers 500') {
  let up = false;
  const received: Received[] = [];
  const failed: Received[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const headers = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, Array.isArray(v) ? v.join(', ') : (v ?? '')]));
      const request = { headers, body: Buffer.concat(chunks).toString('utf8') };
      if (up) {
        received.push(request);
        res.writeHead(200).end('ok');
      } else {
        failed.push(request);
        res.writeHead(500).end('not yet');
      }
    });
  });
  let refused = 0;
  server.on('connection', (socket) => {
    if (!up && failure === 'drops connections') {
      refused++;
      socket.destroy();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    /** Requests answered 200 (after recover()). */
    received,
    /** Requests answered 500 (before recover()). */
    failed,
    refusedConnections: () => refused,
    recover: () => {
      up = true;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

describe(`webhook delivery across a crash (${SERVER_MODE ? 'PostgreSQL server' : 'embedded store'})`, () => {
  // Both cases wait on the retry schedule more than they use a core: they run at the same time,
  // each cleaning up only what it started.
  it.concurrent.for(['drops connections', 'answers 500'] as const)(
    'a server killed after the event and started again still delivers it (receiver first %s)',
    { timeout: 150_000 },
    async (failure, { expect, onTestFinished }) => {
      const base = await freshStore({ migrated: true });
      const store: ProcessStore = { env: { ...base.env, LOYALTY_WEBHOOK_ALLOW_PRIVATE: '1' }, dispose: base.dispose };
      const receiver = await startReceiver(failure);
      const servers: ServerProcess[] = [];
      onTestFinished(async () => {
        await Promise.all(servers.map((server) => killProcess(server.child)));
        await receiver.close();
        await store.dispose();
      });
      const startServerHere = async () => {
        const server = await startServer(store);
        servers.push(server);
        return server;
      };

      const first = await startServerHere();
      const key = printedKeys(first.stdout).privateKey!;
      expect(key).toBeDefined();
      const webhook = await api(first.baseUrl, 'POST', '/api/v1/webhooks', { key, body: { url: receiver.url, events: ['customer.created'] } });
      expect(webhook.status, JSON.stringify(webhook.body)).toBe(201);
      const customer = await api(first.baseUrl, 'POST', '/api/v1/customers', { key, body: { email: 'after-the-crash@example.com' } });
      expect(customer.status, JSON.stringify(customer.body)).toBe(201);

      // The first server tries at once and fails; it is killed before the retry is due (5 s).
      const before = await vi.waitFor(
        async () => {
          const log = await api(first.baseUrl, 'GET', `/api/v1/webhooks/${webhook.body.id}/deliveries`, { key });
          expect(log.status).toBe(200);
          expect(log.body.length).toBeGreaterThanOrEqual(1);
          return log.body as Array<{ message_id: string; attempt: number; status_code: number | null; error: string | null; message_status: string }>;
        },
        { timeout: 20_000, interval: 50 },
      );
      first.signal('SIGKILL');
      expect(await exitWithin(first, 10_000)).toEqual({ code: null, signal: 'SIGKILL' });
      expect(before[0]).toMatchObject({ attempt: 1, message_status: 'pending' });
      if (failure === 'answers 500') {
        expect(before[0]).toMatchObject({ status_code: 500 });
        expect(receiver.failed.length).toBeGreaterThanOrEqual(1);
      } else {
        expect(before[0]).toMatchObject({ status_code: null, error: expect.any(String) });
        expect(receiver.refusedConnections()).toBeGreaterThanOrEqual(1);
      }
      const messageId = before[0]!.message_id;
      expect(new Set(before.map((d) => d.message_id))).toEqual(new Set([messageId]));
      expect(receiver.received).toEqual([]);

      // The receiver comes back, then the server does: the message is still delivered.
      receiver.recover();
      const second = await startServerHere();
      await vi.waitFor(() => expect(receiver.received.length).toBeGreaterThanOrEqual(1), { timeout: 90_000, interval: 100 });

      // At least once, as one message: every copy carries the webhook-id of the attempts before the crash.
      for (const delivery of [...receiver.failed, ...receiver.received]) expect(delivery.headers['webhook-id']).toBe(messageId);
      const delivered = receiver.received[0]!;
      const payload = new Webhook(webhook.body.secret).verify(delivered.body, delivered.headers) as any;
      expect(payload).toMatchObject({ type: 'customer.created', data: { customer_id: customer.body.id, email: 'after-the-crash@example.com' } });

      // The restarted server's log shows the attempts before the crash and the successful one.
      await vi.waitFor(
        async () => {
          const log = await api(second.baseUrl, 'GET', `/api/v1/webhooks/${webhook.body.id}/deliveries`, { key });
          expect(log.status).toBe(200);
          const last = log.body.at(-1);
          expect(last).toMatchObject({ message_id: messageId, status_code: 200, message_status: 'delivered', next_attempt_at: null });
          expect(last.attempt).toBe(log.body.length);
          expect(log.body.slice(0, before.length)).toEqual(before.map((d) => ({ ...d, message_status: 'delivered', next_attempt_at: null })));
        },
        { timeout: 10_000, interval: 100 },
      );
      // Delivered once the receiver was up: no further copies.
      expect(receiver.received).toHaveLength(1);
    },
  );
});

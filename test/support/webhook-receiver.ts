import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

export interface Received {
  headers: Record<string, string>;
  body: string;
  payload: any;
}

export type Reply = { status: number; body?: string; headers?: Record<string, string>; delayMs?: number } | 'hang';

/**
 * A real HTTP receiver on 127.0.0.1. `reply(n, request)` decides the answer to the n-th request
 * (1-based): a status (and body, headers), or 'hang' to never answer. It may return a promise: the
 * answer waits for it (a test acts while the attempt is in flight, then lets it end).
 */
export async function startReceiver(reply: (n: number, request: Received) => Reply | Promise<Reply> = () => ({ status: 200 })) {
  const received: Received[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const headers = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, Array.isArray(v) ? v.join(', ') : (v ?? '')]));
      let payload: unknown;
      try {
        payload = JSON.parse(body);
      } catch {
        payload = undefined;
      }
      const request = { headers, body, payload };
      received.push(request);
      void Promise.resolve(reply(received.length, request)).then((answer) => {
        if (answer === 'hang') return;
        const send = () => res.writeHead(answer.status, { 'content-type': 'text/plain', ...answer.headers }).end(answer.body ?? 'ok');
        if (answer.delayMs) setTimeout(send, answer.delayMs);
        else send();
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    received,
    /** The event types received, in arrival order. */
    types: () => received.map((r) => r.payload?.type as string),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
export type Receiver = Awaited<ReturnType<typeof startReceiver>>;

/** What `secret` signs for this delivery at the timestamp it carries (the Standard Webhooks reference signer). */
export function signatureFor(secret: string, delivery: Received): string {
  return new Webhook(secret).sign(delivery.headers['webhook-id']!, new Date(Number(delivery.headers['webhook-timestamp']) * 1000), delivery.body);
}

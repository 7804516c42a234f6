import { createServer, type Server } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FORBIDDEN_ADDRESS, guardedLookup, webhookFetch } from '../../src/webhooks/pinned-fetch.js';

function lookup(hostname: string, all = false): Promise<{ error: NodeJS.ErrnoException | null; address: unknown }> {
  return new Promise((resolve) => guardedLookup(hostname, { all }, (error, address) => resolve({ error, address })));
}

describe('webhook connections are pinned to the checked address (no DNS rebinding)', () => {
  let server: Server;
  let port = 0;
  let connections = 0;

  beforeAll(async () => {
    server = createServer((socket) => {
      connections += 1;
      socket.destroy();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as { port: number }).port;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('resolves public addresses and refuses names that resolve to loopback', async () => {
    expect(await lookup('93.184.216.34')).toEqual({ error: null, address: '93.184.216.34' });
    expect((await lookup('93.184.216.34', true)).address).toEqual([{ address: '93.184.216.34', family: 4 }]);
    const refused = await lookup('localhost');
    expect(refused.error?.code).toBe(FORBIDDEN_ADDRESS);
    expect(refused.error?.message).toMatch(/localhost resolved to .*must not be sent to/);
  });

  it('fails the delivery at connect time without opening a connection to a private address', async () => {
    const failure = await webhookFetch(false)(`https://localhost:${port}/hook`, { method: 'POST', body: '{}' }).then(
      () => null,
      (error: unknown) => error as { cause?: { code?: string } },
    );
    expect(failure?.cause?.code).toBe(FORBIDDEN_ADDRESS);
    expect(connections).toBe(0);
  });

  it('connects when private addresses are allowed (development and tests)', async () => {
    await webhookFetch(true)(`http://127.0.0.1:${port}/hook`, { method: 'POST', body: '{}' }).catch(() => null);
    expect(connections).toBe(1);
  });
});

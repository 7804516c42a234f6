import { type ChildProcess, fork } from 'node:child_process';
import { type AddressInfo, connect, type Server, type Socket } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Agent, request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { childForConnection, connectionRouter, requestLine } from '../../src/cluster/connection-router.js';
import { ownerOf } from '../../src/cluster/customer-affinity.js';

/**
 * The primary of `serve --processes N` holds the port and hands each connection to a child
 * (connection-router.ts), which feeds it to its HTTP server (connection-adopter.ts). Over real
 * sockets and real child processes: the socket crosses the IPC channel as node:cluster's do.
 */

const CHILD = path.join(path.dirname(fileURLToPath(import.meta.url)), 'fixtures/adopting-child.mjs');
const children: ChildProcess[] = [];
const servers: Server[] = [];
afterEach(async () => {
  for (const child of children.splice(0)) child.kill();
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
});

async function child(name: string): Promise<ChildProcess> {
  const started = fork(CHILD, [name], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  children.push(started);
  await new Promise<void>((resolve) => started.on('message', (m: { type?: string }) => m?.type === 'test:ready' && resolve()));
  return started;
}

/** A router over two children (child-0, child-1; `taking` says which take connections) on a port of its own. */
async function instance(options: { headWaitMs?: number; heldWaitMs?: number; maxHeld?: number; taking?: [boolean, boolean] } = {}) {
  const both = [await child('child-0'), await child('child-1')];
  const taking = options.taking ?? [true, true]; // read at each connection: a test may change it
  const refusals: string[] = [];
  const { taking: _, ...limits } = options;
  const router = connectionRouter({ children: () => both.map((c, i) => (taking[i] ? c : undefined)), onRefused: (reason) => refusals.push(reason), ...limits });
  servers.push(router);
  await new Promise<void>((resolve) => router.listen(0, '127.0.0.1', resolve));
  return { port: (router.address() as AddressInfo).port, children: both, router, refusals };
}

/** A customer id that hashes to child `index` of 2. */
function customerOwnedBy(index: number): string {
  for (let n = 0; ; n++) if (ownerOf(`cus_${n}`, 2) === index) return `cus_${n}`;
}

/** Writes `pieces` to one connection, `gapMs` apart, and collects what comes back until `untilAnswers` answers have come or it closes. */
function converse(port: number, pieces: string[], untilAnswers: number, gapMs = 30): Promise<{ answers: Array<{ status: number; body: any }>; closed: boolean }> {
  return new Promise((resolve, reject) => {
    const socket: Socket = connect(port, '127.0.0.1');
    let text = '';
    let closed = false;
    const answers = () => {
      const found: Array<{ status: number; body: any }> = [];
      let rest = text;
      for (;;) {
        const split = rest.indexOf('\r\n\r\n');
        if (split < 0) break;
        const head = rest.slice(0, split);
        const length = Number(/content-length: (\d+)/i.exec(head)?.[1] ?? 0);
        if (rest.length < split + 4 + length) break;
        const body = rest.slice(split + 4, split + 4 + length);
        found.push({ status: Number(head.split(' ')[1]), body: body ? JSON.parse(body) : undefined });
        rest = rest.slice(split + 4 + length);
      }
      return found;
    };
    const finish = () => {
      socket.destroy();
      resolve({ answers: answers(), closed });
    };
    const timer = setTimeout(() => reject(new Error(`no ${untilAnswers} answers within 5 s: ${JSON.stringify(text)}`)), 5_000);
    socket.on('data', (chunk) => {
      text += chunk.toString('utf8');
      if (answers().length >= untilAnswers) {
        clearTimeout(timer);
        finish();
      }
    });
    socket.on('close', () => {
      closed = true;
      clearTimeout(timer);
      resolve({ answers: answers(), closed });
    });
    socket.on('error', reject);
    socket.on('connect', async () => {
      for (const piece of pieces) {
        socket.write(piece);
        await new Promise((r) => setTimeout(r, gapMs));
      }
    });
  });
}

describe('which child a connection goes to', () => {
  it('reads the request line of the first bytes only', () => {
    expect(requestLine(Buffer.from('POST /api/v1/customers/cus_1/points/transaction HTTP/1.1\r\nHost: x\r\n'))).toEqual({
      method: 'POST',
      url: '/api/v1/customers/cus_1/points/transaction',
    });
    expect(requestLine(Buffer.from('POST /api/v1/customers/cus_1/points/trans'))).toBeUndefined();
    // A bare LF ends the line too (the child's parser decides what to make of it).
    expect(requestLine(Buffer.from('GET /healthz HTTP/1.1\nHost: x\n\n'))).toEqual({ method: 'GET', url: '/healthz' });
    expect(requestLine(Buffer.from('\u0016\u0003\u0001 a TLS hello\r\n'))).toBeUndefined();
  });

  it("goes to the owner of the customer the first request writes, if it takes connections; anything else to the next child in turn", () => {
    const write = (customer: string) => Buffer.from(`POST /api/v1/customers/${customer}/points/transaction HTTP/1.1\r\n`);
    for (const owner of [0, 1]) {
      expect(childForConnection(write(customerOwnedBy(owner)), [true, true], 0)).toBe(owner);
      expect(childForConnection(write(customerOwnedBy(owner)), [true, true], 1)).toBe(owner);
      // The owner is restarting: the other takes it (and passes nothing on to a child that is not there).
      expect(childForConnection(write(customerOwnedBy(owner)), owner === 0 ? [false, true] : [true, false], 0)).toBe(1 - owner);
    }
    const read = Buffer.from(`GET /api/v1/customers/${customerOwnedBy(1)} HTTP/1.1\r\n`);
    expect([0, 1, 2, 3].map((turn) => childForConnection(read, [true, true], turn))).toEqual([0, 1, 0, 1]);
    expect([0, 1, 2].map((turn) => childForConnection(Buffer.alloc(0), [true, false], turn))).toEqual([0, 0, 0]);
    expect(childForConnection(read, [false, false], 0)).toBeUndefined();
  });
});

describe('a connection handed to a child', () => {
  it("is answered by the customer's owner when its first request writes one, and stays with that child for the requests after it", async () => {
    const { port } = await instance();
    for (const owner of [0, 1]) {
      const customer = customerOwnedBy(owner);
      const earn = `POST /api/v1/customers/${customer}/points/transaction HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}`;
      const then = `GET /api/v1/customers HTTP/1.1\r\nHost: x\r\n\r\n`;
      const { answers } = await converse(port, [earn, then], 2);
      expect(answers.map((a) => [a.status, a.body.by, a.body.method, a.body.body])).toEqual([
        [200, `child-${owner}`, 'POST', '{}'],
        [200, `child-${owner}`, 'GET', ''],
      ]);
    }
  });

  it('gets every byte the client sends after the first: a body in later writes than its head, and the next request', async () => {
    const { port } = await instance();
    const customer = customerOwnedBy(1);
    const head = `POST /api/v1/customers/${customer}/points/transaction HTTP/1.1\r\nHost: x\r\nContent-Length: 11\r\n\r\n`;
    const pieces = ['POST /api/v1/cust', head.slice('POST /api/v1/cust'.length), 'hello', ' world', 'GET /after HTTP/1.1\r\nHost: x\r\n\r\n'];
    // Written apart, so that a read holds the first piece alone, and soon after it: the rest must
    // reach the child, not be read by the router while the socket is on its way. Over 20
    // connections at once, with gaps from 0 to 40 ms, to meet that moment.
    const conversations = await Promise.all(Array.from({ length: 20 }, (_, i) => converse(port, pieces, 2, i * 2)));
    for (const { answers } of conversations) {
      expect(answers.map((a) => [a.body.by, a.body.method, a.body.url, a.body.body])).toEqual([
        ['child-1', 'POST', `/api/v1/customers/${customer}/points/transaction`, 'hello world'],
        ['child-1', 'GET', '/after', ''],
      ]);
    }
  });

  it('serves keep-alive clients: 200 requests over 8 connections, each answered once with its own body', async () => {
    const { port } = await instance();
    const agent = new Agent({ connections: 8 });
    try {
      const answers = await Promise.all(
        Array.from({ length: 200 }, async (_, i) => {
          const customer = `cus_${i % 5}`;
          const response = await request(`http://127.0.0.1:${port}/api/v1/customers/${customer}/points/transaction`, { method: 'POST', body: `body-${i}`, dispatcher: agent });
          return (await response.body.json()) as { by: string; body: string };
        }),
      );
      expect(answers.map((a) => a.body)).toEqual(Array.from({ length: 200 }, (_, i) => `body-${i}`));
    } finally {
      await agent.close();
    }
  });

  it("goes to a child in turn after the wait when it sends nothing, and that child's header timeout applies to it", async () => {
    const { port } = await instance({ headWaitMs: 100 });
    const started = Date.now();
    // Half a request, never finished: the child answers 408 once its header timeout (400 ms) has passed.
    const { answers, closed } = await converse(port, ['GET /slow HTTP/1.1\r\nHost: x\r\n'], 1);
    expect(closed || answers.length === 1).toBe(true);
    expect(answers[0]?.status).toBe(408);
    expect(Date.now() - started).toBeGreaterThanOrEqual(400);
    // Nothing at all for longer than the wait: handed over as it is, and answered when it speaks.
    const late = await new Promise<{ status: number; body: any }>((resolve, reject) => {
      const socket = connect(port, '127.0.0.1');
      let text = '';
      socket.on('data', (chunk) => {
        text += chunk;
        const split = text.indexOf('\r\n\r\n');
        const length = Number(/content-length: (\d+)/i.exec(text)?.[1] ?? -1);
        if (split >= 0 && length >= 0 && text.length >= split + 4 + length) {
          socket.destroy();
          resolve({ status: Number(text.split(' ')[1]), body: JSON.parse(text.slice(split + 4)) });
        }
      });
      socket.on('error', reject);
      socket.on('connect', () => setTimeout(() => socket.write('GET /late HTTP/1.1\r\nHost: x\r\n\r\n'), 250));
    });
    expect([late.status, late.body.url]).toEqual([200, '/late']);
  });

  it('is handed over at once when its request line ends with a bare LF, and answered by the child', async () => {
    const { port } = await instance({ headWaitMs: 5_000 });
    const started = Date.now();
    const { answers } = await converse(port, ['GET /bare-lf HTTP/1.1\nHost: x\n\n'], 1);
    expect(answers.map((a) => a.status)).toHaveLength(1);
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it('waits while no child takes connections, and goes to the first that does; at shutdown, is answered 503', async () => {
    const taking: [boolean, boolean] = [false, false];
    const { port, router, refusals } = await instance({ taking });
    const pending = converse(port, ['GET /waited HTTP/1.1\r\nHost: x\r\n\r\n'], 1);
    await new Promise((r) => setTimeout(r, 300));
    router.childrenChanged(); // still no child: it keeps waiting
    await new Promise((r) => setTimeout(r, 100));
    taking[1] = true;
    router.childrenChanged();
    const { answers } = await pending;
    expect(answers.map((a) => [a.status, a.body.by, a.body.url])).toEqual([[200, 'child-1', '/waited']]);

    taking[1] = false;
    const refused = converse(port, ['GET /refused HTTP/1.1\r\nHost: x\r\n\r\n'], 1);
    await new Promise((r) => setTimeout(r, 300));
    router.refuseHeld();
    const { answers: [answer] } = await refused;
    expect(answer).toMatchObject({ status: 503, body: { code: 'unavailable', request_id: expect.stringMatching(/^req_/) } });
    expect(refusals).toEqual(['stopping']);
  });

  it('is answered 503 when no child takes it within the wait, or when as many connections wait already; the answer arrives whole, also with a body left unread', async () => {
    const { port, refusals } = await instance({ taking: [false, false], heldWaitMs: 400, maxHeld: 1 });
    const started = Date.now();
    const waited = converse(port, ['GET /waited HTTP/1.1\r\nHost: x\r\n\r\n'], 1);
    await new Promise((r) => setTimeout(r, 150));
    // One connection waits already: the next is refused at once, with its 256 KB body still coming.
    const body = 'x'.repeat(256 * 1024);
    const full = await converse(port, [`POST /api/v1/customers/c/points/transaction HTTP/1.1\r\nHost: x\r\nContent-Length: ${body.length}\r\n\r\n`, body], 1, 5);
    expect(full.answers.map((a) => [a.status, a.body.code])).toEqual([[503, 'unavailable']]);
    expect(refusals).toEqual(['full']);
    const { answers } = await waited;
    expect(answers.map((a) => [a.status, a.body.code])).toEqual([[503, 'unavailable']]);
    expect(Date.now() - started).toBeGreaterThanOrEqual(350);
    expect(refusals).toEqual(['full', 'waited']);
  });

  it("lets the child tell when every connection it was given has closed (what its drain waits for)", async () => {
    const { port, children: [first] } = await instance();
    const socket = connect(port, '127.0.0.1');
    await new Promise((r) => socket.on('connect', r));
    socket.write(`POST /api/v1/customers/${customerOwnedBy(0)}/x HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n`);
    await new Promise((r) => socket.once('data', r));
    let allClosed = false;
    first!.on('message', (m: { type?: string }) => void (m?.type === 'test:all-closed' && (allClosed = true)));
    first!.send({ type: 'test:closed' });
    await new Promise((r) => setTimeout(r, 200));
    expect(allClosed).toBe(false); // the kept-alive connection is still open
    socket.destroy();
    const deadline = Date.now() + 3_000;
    while (!allClosed && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(allClosed).toBe(true);
  });
});

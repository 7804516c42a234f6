import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { connect } from 'node:net';
import { Duplex } from 'node:stream';
import type { Server } from 'node:http';
import { Hono } from 'hono';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ClientError, clientErrorListener } from '../../src/http/errors/client-error.js';
import { createHttpServer } from '../../src/http/http-server.js';
import { rawRequest } from '../support/raw-http.js';

/**
 * Requests Node's HTTP parser refuses never reach the app, so they are tested on a real server:
 * the same `createHttpServer` as `loyalty serve`, raw bytes over TCP.
 */
describe('requests the HTTP parser refuses', () => {
  let server: Server;
  let port: number;
  const logged: Array<Record<string, unknown>> = [];

  beforeAll(async () => {
    const app = new Hono().get('/', (c) => c.json({ ok: true }));
    server = createHttpServer(app.fetch, { hostname: '127.0.0.1', logger: pino({ level: 'info' }, { write: (line: string) => void logged.push(JSON.parse(line)) }) });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  function expectJsonError(response: Awaited<ReturnType<typeof rawRequest>>, status: number, code: string) {
    expect(response.status).toBe(status);
    expect(response.headers['content-type']).toBe('application/json');
    expect(response.headers['connection']).toBe('close');
    const body = JSON.parse(response.body);
    expect(Object.keys(body).sort()).toEqual(['code', 'message', 'request_id']);
    expect(body).toMatchObject({ code, message: expect.any(String), request_id: expect.stringMatching(/^req_[A-Za-z0-9]{20}$/) });
    expect(response.headers['x-request-id']).toBe(body.request_id);
    expect(Number(response.headers['content-length'])).toBe(Buffer.byteLength(response.body));
    expect(response.closed).toBe(true);
    return body as { request_id: string };
  }

  it('answers a 20 KB header with 431 headers_too_large as JSON, with a request id, and closes the connection', async () => {
    const response = await rawRequest(port, `GET / HTTP/1.1\r\nHost: localhost\r\nX-Padding: ${'a'.repeat(20 * 1024)}\r\n\r\n`);
    const body = expectJsonError(response, 431, 'headers_too_large');
    expect(logged).toContainEqual(expect.objectContaining({ request_id: body.request_id, status: 431, parse_error: 'HPE_HEADER_OVERFLOW' }));
  });

  it('answers a Host header that is not a host with 400 bad_request as JSON (Node parses it; the adapter cannot use it)', async () => {
    const response = await rawRequest(port, 'GET / HTTP/1.1\r\nHost: \u00fcn\u00ef.example\r\n\r\n');
    const body = expectJsonError(response, 400, 'bad_request');
    expect(logged).toContainEqual(expect.objectContaining({ request_id: body.request_id, status: 400, reason: expect.any(String) }));
  });

  it.each([
    ['a request line that is not HTTP', 'HELLO THERE\r\n\r\n'],
    ['a header name with a space', 'GET / HTTP/1.1\r\nHost: localhost\r\nBad Header: 1\r\n\r\n'],
    ['two different Content-Lengths', 'POST / HTTP/1.1\r\nHost: localhost\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab'],
    ['a chunk size that is not hex', 'POST / HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n'],
    ['a bare LF inside the request line', 'GET /\n HTTP/1.1\r\nHost: localhost\r\n\r\n'],
  ])('answers %s with 400 bad_request as JSON, with a request id', async (_what, bytes) => {
    expectJsonError(await rawRequest(port, bytes), 400, 'bad_request');
  });

  it('still serves well-formed requests, and a request id is new for every refusal', async () => {
    const ok = await rawRequest(port, 'GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n');
    expect(ok.status).toBe(200);
    expect(JSON.parse(ok.body)).toEqual({ ok: true });
    const ids = await Promise.all([1, 2, 3].map(async () => JSON.parse((await rawRequest(port, 'HELLO\r\n\r\n')).body).request_id));
    expect(new Set(ids).size).toBe(3);
  });

  it('lets a client that resets mid-request go quietly, and keeps serving', async () => {
    const before = logged.length;
    const socket = connect(port, '127.0.0.1');
    await once(socket, 'connect');
    socket.write('GET / HTTP/1.1\r\nHost: localhost\r\nX-Half: ');
    await new Promise((resolve) => setTimeout(resolve, 50));
    socket.resetAndDestroy();
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(logged.slice(before)).toEqual([]);
    const ok = await rawRequest(port, 'GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n');
    expect(ok.status).toBe(200);
  });
});

describe('the clientError listener on a socket it must not write to', () => {
  /** A socket stand-in that records what is written and whether it was destroyed. */
  function fakeSocket({ writable = true, responseStarted = false } = {}) {
    const written: string[] = [];
    const socket = new Duplex({
      read() {},
      write(chunk, _encoding, done) {
        written.push(String(chunk));
        done();
      },
    });
    if (!writable) socket.end();
    if (responseStarted) Object.assign(socket, { _httpMessage: { headersSent: true } });
    return { socket, written };
  }
  const parseError = (code: string): ClientError => Object.assign(new Error(code), { code });

  it('writes nothing and destroys the socket after a reset, on a socket no longer writable, or once a response has started', async () => {
    const listener = clientErrorListener();
    for (const [error, options] of [
      [parseError('ECONNRESET'), {}],
      [parseError('HPE_HEADER_OVERFLOW'), { writable: false }],
      [parseError('HPE_INVALID_METHOD'), { responseStarted: true }],
    ] as const) {
      const { socket, written } = fakeSocket(options);
      const before = written.length;
      listener(error, socket);
      await new Promise((resolve) => setImmediate(resolve));
      expect(written.length).toBe(before);
      expect(socket.destroyed).toBe(true);
    }
  });

  it('answers a socket once, however often its parser fails again', async () => {
    const listener = clientErrorListener();
    const { socket, written } = fakeSocket();
    listener(parseError('HPE_INVALID_METHOD'), socket);
    listener(parseError('HPE_INVALID_METHOD'), socket);
    await new Promise((resolve) => setImmediate(resolve));
    expect(written.join('')).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
    expect(written.join('').match(/HTTP\/1\.1 400/g)).toHaveLength(1);
  });
});

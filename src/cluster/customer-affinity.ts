import type { IncomingHttpHeaders, IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { Pool } from 'undici';
import { MAX_BODY_BYTES } from '../http/middleware/body-size.js';
import { newId } from '../ids.js';
import { fnv1a } from '../string-hash.js';

/**
 * Where the HTTP children of one `loyalty serve` instance send each other the writes to a
 * customer: every change to customer C is made by one child, C's owner, so that its state cache,
 * in-process locks and group commit see every write to C. Without it, two children writing one
 * customer each decide on a state the other has moved: every write is then decided again on the
 * stream as stored (a read more, and group-commit batches of a write or two), which on one hot
 * customer cost two processes about twice the CPU per earn of one.
 *
 * The owner is a hash of the customer id over the instance's HTTP children. A child that gets a
 * write to a customer it does not own reads the body (bounded by the API's body limit) and passes
 * the request as it came, over a Unix socket, to the owner, which answers it like any other
 * (authentication, rate limit, idempotency, read-your-writes) and whose answer goes back as it is.
 * Reads are never passed on: the read models are shared.
 *
 * Correctness never depends on this: where a write is made elsewhere (the owner cannot be reached,
 * the child is draining, a chunked body, another instance or a `--role api` process on another
 * machine), the store's expected revisions and the batch's decision on the stream as stored make
 * it exact, only slower.
 */
export interface AffinityOptions {
  /** This child's place among the instance's HTTP children, from 0. */
  index: number;
  /** How many HTTP children the instance has. */
  size: number;
  /** The Unix socket child `i` answers passed-on requests at. */
  socketOf: (index: number) => string;
  /** False once this child drains: it then makes every write itself (see `passOn`). */
  passing: () => boolean;
  /** Told what became of each write this child passed on (for `/metrics`). */
  passed?: (outcome: PassedOutcome) => void;
}

/** `answered`: by the owner; `made_here`: the owner could not be reached; `unknown`: it went away meanwhile (503). */
export type PassedOutcome = 'answered' | 'made_here' | 'unknown';

/** The environment variables through which the primary tells an HTTP child where it stands. */
export const AFFINITY_VARIABLES = { instance: 'LOYALTY_CLUSTER_INSTANCE', index: 'LOYALTY_CLUSTER_INDEX', size: 'LOYALTY_CLUSTER_HTTP_PROCESSES' } as const;

/** The longest socket path every platform takes whole (Linux's limit is 107 bytes, macOS's 103). */
const MAX_SOCKET_PATH_BYTES = 100;

/**
 * The socket HTTP child `index` of instance `instance` (its primary's pid) listens on for passed-on
 * writes; undefined when the temporary directory's path is too long for one (the kernel would cut
 * the path, and every child's would name the same file): then no write is passed on.
 */
export function affinitySocket(instance: string, index: number): string | undefined {
  const socket = path.join(os.tmpdir(), `loyalty-${instance}-${index}.sock`);
  return Buffer.byteLength(socket) <= MAX_SOCKET_PATH_BYTES ? socket : undefined;
}

/** The customer a request writes, when it is a write to one customer (`/api/v1/customers/{id}` and below). */
export function customerWritten(method: string | undefined, url: string | undefined): string | undefined {
  if (method === 'GET' || method === 'HEAD' || method === 'OPTIONS' || !url) return undefined;
  const match = /^\/api\/v1\/customers\/([^/?#]+)/.exec(url);
  return match?.[1];
}

/** The child that makes `customerId`'s writes: the same in every child. */
export function ownerOf(customerId: string, size: number): number {
  return fnv1a(customerId) % size;
}

/**
 * Headers that belong to one connection, not to the request or answer passed on. `expect`: this
 * child has answered `100 Continue` and read the body already (and undici refuses the header).
 */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'proxy-connection', 'te', 'trailer', 'expect']);

function endToEnd(headers: IncomingHttpHeaders): Record<string, string | string[]> {
  const kept: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(headers)) if (value !== undefined && !HOP_BY_HOP.has(name)) kept[name] = value;
  return kept;
}

/**
 * Errors that say the request never reached the owner: making it here instead is safe. Nothing
 * listens (a child restarting), or undici refused the request before sending it.
 */
const NOT_SENT = new Set(['ECONNREFUSED', 'ENOENT', 'UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_INVALID_ARG', 'UND_ERR_NOT_SUPPORTED']);

/**
 * Wraps `local` (the app's listener): writes owned by another child are passed on to it; the rest,
 * and any write the owner cannot be reached for, are answered by `local`.
 */
export function passingOnWrites(local: RequestListener, options: AffinityOptions): RequestListener & { close(): Promise<void> } {
  const pools = new Map<number, Pool>();
  const poolOf = (owner: number) => {
    let pool = pools.get(owner);
    if (!pool) {
      pool = new Pool('http://localhost', { socketPath: options.socketOf(owner), connections: 64, pipelining: 1 });
      pools.set(owner, pool);
    }
    return pool;
  };
  const listener = (req: IncomingMessage, res: ServerResponse) => {
    const customer = options.size > 1 ? customerWritten(req.method, req.url) : undefined;
    const owner = customer === undefined ? options.index : ownerOf(customer, options.size);
    const length = req.headers['content-length'];
    // Bodies this child could not pass on whole (chunked, or over the limit the owner would refuse)
    // are answered here, as is everything while draining: the owner may be draining too.
    if (owner === options.index || !options.passing() || req.headers['transfer-encoding'] !== undefined || (length !== undefined && !(Number(length) <= MAX_BODY_BYTES))) {
      return void local(req, res);
    }
    void readBody(req)
      .then(
        async (body) => options.passed?.(await passOn(poolOf(owner), req, body, res, () => local(Object.assign(req, { rawBody: body }), res))),
        () => req.destroy(), // the client went away while sending
      )
      .catch(() => unknownOutcome(res)); // nothing above should throw; if it does, the request is still answered
  };
  return Object.assign(listener, { close: async () => void (await Promise.all([...pools.values()].map((p) => p.close()))) });
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

/**
 * Sends the request to its owner and its answer back. If it never reached the owner (a child
 * restarting, say), `here` answers it; if the owner went away after it was sent, whether it was
 * applied is unknown: 503 `unavailable`, which a client retries with the same Idempotency-Key.
 */
async function passOn(pool: Pool, req: IncomingMessage, body: Buffer, res: ServerResponse, here: () => void): Promise<PassedOutcome> {
  let answer;
  let payload: Buffer;
  try {
    answer = await pool.request({ method: req.method as 'POST', path: req.url!, headers: endToEnd(req.headers), body });
    payload = Buffer.from(await answer.body.arrayBuffer());
  } catch (error) {
    if (!answer && NOT_SENT.has((error as { code?: string }).code ?? '')) {
      here();
      return 'made_here';
    }
    unknownOutcome(res);
    return 'unknown';
  }
  const headers = endToEnd(answer.headers as IncomingHttpHeaders);
  // The owner closed after an early answer: this connection holds no unread body (it was read
  // whole), but the answer says close, and a client may rely on it.
  if (answer.headers.connection === 'close') headers.connection = 'close';
  res.writeHead(answer.statusCode, headers);
  res.end(payload);
  return 'answered';
}

function unknownOutcome(res: ServerResponse): void {
  if (res.headersSent) return void res.destroy();
  const requestId = newId('request');
  const body = JSON.stringify({
    code: 'unavailable',
    message: 'The process that makes this customer’s changes stopped while answering; whether the change was made is unknown. Retry with the same Idempotency-Key.',
    request_id: requestId,
  });
  res.writeHead(503, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'x-request-id': requestId, 'retry-after': '1' });
  res.end(body);
}

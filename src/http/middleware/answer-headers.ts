import type { ServerResponse } from 'node:http';
import type { Context, Next } from 'hono';

/**
 * Puts `headers` on the answer to this request, whatever the handlers after `next` answer (an
 * error included); a header the answer itself carries keeps its own value.
 *
 * Behind Node's HTTP server they go on Node's response before the handlers run, and Node merges
 * them into the head it writes. Set on the web `Response` instead (`c.res.headers`, as hono's
 * header middleware do), they would turn the adapter's plain header object into a `Headers`
 * object for every answer and send it down the adapter's slow path: measured on 2 cores, that
 * was about a fifth of the CPU of a `GET /healthz` (docs/performance.md, "Session of 2026-11-29
 * (eighth)"). Without a Node response (`app.request` in tests), they go on the `Response`.
 */
export async function withAnswerHeaders(c: Context, headers: Iterable<readonly [string, string]>, next: Next): Promise<void> {
  const outgoing = nodeResponse(c);
  if (outgoing) {
    for (const [name, value] of headers) outgoing.setHeader(name, value);
    return next();
  }
  await next();
  for (const [name, value] of headers) if (!c.res.headers.has(name)) c.res.headers.set(name, value);
}

/** The Node response `@hono/node-server` passes as `c.env.outgoing`, before anything was written to it. */
function nodeResponse(c: Context): ServerResponse | undefined {
  const outgoing = (c.env as { outgoing?: ServerResponse } | undefined)?.outgoing;
  return outgoing && !outgoing.headersSent ? outgoing : undefined;
}

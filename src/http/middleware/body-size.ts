import { bodyLimit } from 'hono/body-limit';
import { createMiddleware } from 'hono/factory';
import { ApiError } from '../../errors.js';

/** The largest request body the API reads (CONTRACT.md §3); every mention of the limit derives from it. */
export const MAX_BODY_BYTES = 64 * 1024;

/** The limit as people read it: `64 KiB`. */
export const MAX_BODY_SIZE_TEXT = `${MAX_BODY_BYTES / 1024} KiB`;

/** 413 `payload_too_large`: the answer to a body over `MAX_BODY_BYTES`. */
export const payloadTooLarge = () => new ApiError(413, 'payload_too_large', `The request body is larger than ${MAX_BODY_SIZE_TEXT}.`);

/** Counts a body of unknown length as it streams in. */
const streamedBodyLimit = bodyLimit({
  maxSize: MAX_BODY_BYTES,
  onError: () => {
    throw payloadTooLarge();
  },
});

/**
 * Refuses a body over `MAX_BODY_BYTES`. A body that declares its length is judged by the header
 * alone (Node's parser never delivers more than Content-Length). Only a chunked body is counted as
 * it streams in, by hono's `bodyLimit`: that needs the request as a web `Request` with a stream,
 * which costs about a tenth of an earn's CPU, so the common case never builds one.
 */
export const bodySize = createMiddleware(async (c, next) => {
  if (c.req.method === 'GET' || c.req.method === 'HEAD') return next();
  const length = c.req.header('content-length');
  if (length !== undefined && c.req.header('transfer-encoding') === undefined) {
    if (Number(length) > MAX_BODY_BYTES) throw payloadTooLarge();
    return next();
  }
  return streamedBodyLimit(c, next);
});

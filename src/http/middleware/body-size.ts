import { bodyLimit } from 'hono/body-limit';
import { ApiError } from '../../errors.js';

/** The largest request body the API reads (CONTRACT.md §3); every mention of the limit derives from it. */
export const MAX_BODY_BYTES = 64 * 1024;

/** The limit as people read it: `64 KiB`. */
export const MAX_BODY_SIZE_TEXT = `${MAX_BODY_BYTES / 1024} KiB`;

/** 413 `payload_too_large`: the answer to a body over `MAX_BODY_BYTES`. */
export const payloadTooLarge = () => new ApiError(413, 'payload_too_large', `The request body is larger than ${MAX_BODY_SIZE_TEXT}.`);

/** Refuses a body over `MAX_BODY_BYTES`, as it streams in. */
export const bodySize = bodyLimit({
  maxSize: MAX_BODY_BYTES,
  onError: () => {
    throw payloadTooLarge();
  },
});

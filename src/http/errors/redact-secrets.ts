import { KEY_PREFIXES } from '../../events/permissions.js';

const SECRET_SHAPES = new RegExp(`(${KEY_PREFIXES.private}|${KEY_PREFIXES.public})[0-9A-Za-z]{16,}|(whsec_)[0-9A-Za-z+/=]{16,}`, 'g');

/**
 * Replaces anything shaped like an API key or a webhook secret with its prefix and `[redacted]`.
 * Keys belong in headers, but a client that puts one in a URL path would otherwise see it echoed
 * in that request's own error message and written to the request log.
 */
export function redactSecrets(text: string): string {
  return text.replace(SECRET_SHAPES, (_match, keyPrefix: string | undefined, secretPrefix: string | undefined) => `${keyPrefix ?? secretPrefix}[redacted]`);
}

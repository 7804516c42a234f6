import { Webhook } from 'standardwebhooks';
import type { webhooks } from './generated/api.js';

/** Every webhook message the service sends: a union told apart by `type`, with `data` typed per type. */
export type WebhookMessage = {
  [T in keyof webhooks]: webhooks[T]['post']['requestBody']['content']['application/json'];
}[keyof webhooks];
export type WebhookEventType = WebhookMessage['type'];

/**
 * Verifies a webhook's signature and age (Standard Webhooks) and returns its typed message;
 * throws when either is wrong. Pass the raw body exactly as received, and the request's headers.
 *
 * ```ts
 * const verify = webhookVerifier(process.env.LOYALTY_WEBHOOK_SECRET!);
 * const message = verify(rawBody, req.headers);
 * if (message.type === 'tier.upgraded') console.log(message.data.new_tier.name);
 * ```
 */
export function webhookVerifier(secret: string): (body: string, headers: Record<string, string | string[] | undefined> | Headers) => WebhookMessage {
  const webhook = new Webhook(secret);
  return (body, headers) => {
    const flat: Record<string, string> = {};
    const entries = headers instanceof Headers ? [...headers.entries()] : Object.entries(headers);
    for (const [name, value] of entries) if (value !== undefined) flat[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : value;
    return webhook.verify(body, flat) as WebhookMessage;
  };
}

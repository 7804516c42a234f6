import { errors } from '../../errors.js';
import type { EventOf } from '../../events/catalogue.js';
import { changedFields } from '../changed-fields.js';
import type { Decider } from '../decider.js';

export type WebhookEvent = EventOf<'WebhookCreated' | 'WebhookUpdated' | 'WebhookSecretRotated' | 'WebhookDeleted'>;
type Created = EventOf<'WebhookCreated'>['data'];
type Changes = EventOf<'WebhookUpdated'>['data'];

export type WebhookCommand =
  | { type: 'CreateWebhook'; webhook: Created }
  | { type: 'UpdateWebhook'; changes: Changes }
  | { type: 'RotateSecret'; previousSecretExpiresAt: string }
  | { type: 'DeleteWebhook' };

export interface WebhookState {
  webhook: (Created & { active: boolean }) | null;
  deleted: boolean;
}

export const webhookDecider: Decider<WebhookCommand, WebhookState, WebhookEvent> = {
  initialState: () => ({ webhook: null, deleted: false }),

  evolve(state, event) {
    switch (event.type) {
      case 'WebhookCreated':
        return { webhook: { ...event.data, active: true }, deleted: false };
      case 'WebhookUpdated': {
        const { reason: _reason, ...changes } = event.data;
        return { ...state, webhook: { ...state.webhook!, ...definedOnly(changes) } };
      }
      case 'WebhookSecretRotated':
        return state;
      case 'WebhookDeleted':
        return { webhook: { ...state.webhook!, active: false }, deleted: true };
      default: {
        const exhaustive: never = event;
        return exhaustive;
      }
    }
  },

  decide(command, state) {
    if (command.type === 'CreateWebhook') {
      if (state.webhook) throw errors.conflict(`Webhook '${command.webhook.webhook_id}' already exists.`);
      return [{ type: 'WebhookCreated', data: command.webhook }];
    }
    const webhook = state.webhook;
    if (!webhook || state.deleted) throw errors.webhookNotFound('unknown');
    switch (command.type) {
      case 'UpdateWebhook': {
        const { reason, ...changes } = command.changes;
        const changed = changedFields(webhook, changes);
        if (Object.keys(changed).length === 0) return [];
        return [{ type: 'WebhookUpdated', data: reason === undefined ? changed : { ...changed, reason } }];
      }
      case 'RotateSecret':
        return [{ type: 'WebhookSecretRotated', data: { previous_secret_expires_at: command.previousSecretExpiresAt } }];
      case 'DeleteWebhook':
        return [{ type: 'WebhookDeleted', data: {} }];
      default: {
        const exhaustive: never = command;
        return exhaustive;
      }
    }
  },
};

function definedOnly<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}

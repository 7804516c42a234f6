import { errors } from '../../errors.js';
import type { EventOf } from '../../events/catalogue.js';
import type { Decider } from '../decider.js';

export type ApiKeyEvent = EventOf<'ApiKeyCreated' | 'ApiKeyRevoked'>;

export type ApiKeyCommand =
  | { type: 'CreateApiKey'; key: EventOf<'ApiKeyCreated'>['data'] }
  | { type: 'RevokeApiKey'; keyId: string };

export interface ApiKeyState {
  exists: boolean;
  businessId: string | null;
  revoked: boolean;
}

export const apiKeyDecider: Decider<ApiKeyCommand, ApiKeyState, ApiKeyEvent> = {
  initialState: () => ({ exists: false, businessId: null, revoked: false }),

  evolve(state, event) {
    switch (event.type) {
      case 'ApiKeyCreated':
        return { ...state, exists: true, businessId: event.data.business_id };
      case 'ApiKeyRevoked':
        return { ...state, revoked: true };
      default: {
        const exhaustive: never = event;
        return exhaustive;
      }
    }
  },

  decide(command, state) {
    switch (command.type) {
      case 'CreateApiKey':
        if (state.exists) throw errors.conflict(`Key '${command.key.key_id}' already exists.`);
        return [{ type: 'ApiKeyCreated', data: command.key }];
      case 'RevokeApiKey':
        if (!state.exists) throw errors.keyNotFound(command.keyId);
        // Revoking twice is not an error: DELETE answers the key as it now stands.
        return state.revoked ? [] : [{ type: 'ApiKeyRevoked', data: { key_id: command.keyId } }];
      default: {
        const exhaustive: never = command;
        return exhaustive;
      }
    }
  },
};

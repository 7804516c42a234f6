import { errors } from '../../errors.js';
import type { EventOf } from '../../events/catalogue.js';
import type { Decider } from '../decider.js';
import { missingPermission } from '../../events/permissions.js';

export type ApiKeyEvent = EventOf<'ApiKeyCreated' | 'ApiKeyRevoked'>;

export type ApiKeyCommand =
  | { type: 'CreateApiKey'; key: EventOf<'ApiKeyCreated'>['data'] }
  | {
      type: 'RevokeApiKey';
      keyId: string;
      /** The revoking key's permissions; null or absent: the CLI, which may revoke any key. */
      revoker?: readonly string[] | null;
      /** Revoke even the business's last active private key with keys:write (`loyalty keys revoke --force`). */
      force?: boolean;
      /** Whether another active private key of the business holds keys:write (absent: none is known). */
      anotherKeyManager?: boolean;
    };

export interface ApiKeyState {
  exists: boolean;
  businessId: string | null;
  type: 'private' | 'public' | null;
  permissions: readonly string[];
  revoked: boolean;
}

/** An active private key holding keys:write: the API never revokes a business's last one (CONTRACT.md §2). */
export function managesKeys(state: ApiKeyState): boolean {
  return state.exists && !state.revoked && state.type === 'private' && state.permissions.includes('keys:write');
}

export const apiKeyDecider: Decider<ApiKeyCommand, ApiKeyState, ApiKeyEvent> = {
  initialState: () => ({ exists: false, businessId: null, type: null, permissions: [], revoked: false }),

  evolve(state, event) {
    switch (event.type) {
      case 'ApiKeyCreated':
        return { ...state, exists: true, businessId: event.data.business_id, type: event.data.type, permissions: event.data.permissions };
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
      case 'RevokeApiKey': {
        if (!state.exists) throw errors.keyNotFound(command.keyId);
        // A key revokes only keys whose permissions it holds itself (CONTRACT.md §2).
        const missing = command.revoker ? missingPermission(command.revoker, state.permissions) : undefined;
        if (missing) throw errors.insufficientPermissions(missing);
        // Revoking twice is not an error: DELETE answers the key as it now stands.
        if (state.revoked) return [];
        if (!command.force && managesKeys(state) && !command.anotherKeyManager) throw errors.lastPrivateKey(command.keyId);
        return [{ type: 'ApiKeyRevoked', data: { key_id: command.keyId } }];
      }
      default: {
        const exhaustive: never = command;
        return exhaustive;
      }
    }
  },
};

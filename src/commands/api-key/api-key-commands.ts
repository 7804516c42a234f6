import { createHash } from 'node:crypto';
import { errors } from '../../errors.js';
import type { CommandContext } from '../../events/metadata.js';
import { newId, newKeySecret } from '../../ids.js';
import { loadAggregate, withMetadata } from '../aggregate.js';
import type { CommandDeps } from '../command-deps.js';
import { write } from '../write.js';
import { streams } from '../streams.js';
import { apiKeyDecider } from './api-key-decider.js';
import { KEY_PREFIXES, missingPermission, type Permission, permissionsForNewKey } from './permissions.js';

export interface CreateKeyInput {
  type: 'private' | 'public';
  name: string | null;
  /** Private keys only; all permissions when absent. */
  permissions: Permission[] | null;
}

/** The only place a key's hash is computed: stored at creation, looked up on every request. */
export function hashApiKey(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}

export function apiKeyCommands(deps: CommandDeps) {
  const { store } = deps;
  return {
    /**
     * Creates a key and returns it in full, the only time it is shown. `grantor` is the creating
     * key's permissions: a key cannot hand out a permission it does not hold.
     */
    async create(ctx: CommandContext, input: CreateKeyInput, grantor: readonly string[] | null = null) {
      const permissions = permissionsForNewKey(input.type, input.permissions);
      if (input.type === 'public' && input.permissions !== null) {
        throw errors.validation([{ path: 'permissions', message: 'public keys always hold customers:read, points:read, rewards:read' }]);
      }
      const missing = grantor ? missingPermission(grantor, permissions) : undefined;
      if (missing) throw errors.insufficientPermissions(missing);
      const keyId = newId('apiKey');
      const key = `${KEY_PREFIXES[input.type]}${newKeySecret()}`;
      const data = {
        key_id: keyId,
        business_id: ctx.businessId,
        type: input.type,
        name: input.name,
        permissions,
        key_hash: hashApiKey(key),
        key_hint: `${KEY_PREFIXES[input.type]}…${key.slice(-4)}`,
      };
      const events = apiKeyDecider.decide({ type: 'CreateApiKey', key: data }, apiKeyDecider.initialState());
      const result = await store.append([{ stream: streams.apiKey(keyId), expected: 'no_stream', events: withMetadata(events, ctx) }]);
      await deps.settle(result.position);
      return { id: keyId, key };
    },

    async revoke(ctx: CommandContext, keyId: string): Promise<void> {
      const stream = streams.apiKey(keyId);
      await write(deps, [stream], async () => {
        const { state, revision } = await loadAggregate(store, stream, apiKeyDecider);
        if (!state.exists || state.businessId !== ctx.businessId) throw errors.keyNotFound(keyId);
        return [{ stream, expected: revision, events: withMetadata(apiKeyDecider.decide({ type: 'RevokeApiKey', keyId }, state), ctx) }];
      });
    },
  };
}

export type ApiKeyCommands = ReturnType<typeof apiKeyCommands>;

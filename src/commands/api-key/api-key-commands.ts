import { errors } from '../../errors.js';
import type { CommandContext } from '../../events/metadata.js';
import { newKeySecret } from '../../ids.js';
import { decidedWrite, type Load, unchangedSince } from '../aggregate.js';
import { type CommandDeps, firstOn, startStream } from '../command-bus.js';
import { streams } from '../../events/streams.js';
import { apiKeyDecider, managesKeys } from './api-key-decider.js';
import { hashApiKey, KEY_PREFIXES, missingPermission, type Permission, permissionsForNewKey } from '../../events/permissions.js';

export interface CreateKeyInput {
  type: 'private' | 'public';
  name: string | null;
  /** Private keys only; all permissions when absent. */
  permissions: Permission[] | null;
}

export interface ApiKeyCommandOptions {
  /**
   * Ids of the business's active private keys holding keys:write, as the read models know them
   * (`accessQueries.keyManagerIds`): only candidates, each checked on the log before it counts.
   */
  keyManagers(businessId: string): Promise<string[]>;
  /** Told after a revocation (every process of this instance forgets the principals it remembers). */
  revoked?: () => Promise<void>;
}

export function apiKeyCommands({ bus, ids }: CommandDeps, { keyManagers, revoked }: ApiKeyCommandOptions) {
  /** Another active private key of the business with keys:write, loaded from the log; null when there is none. */
  async function anotherKeyManager(load: Load, businessId: string, keyId: string) {
    for (const id of await keyManagers(businessId)) {
      if (id === keyId) continue;
      const stream = streams.apiKey(id);
      const loaded = await load(stream, apiKeyDecider);
      if (loaded.state.businessId === businessId && managesKeys(loaded.state)) return { stream, loaded };
    }
    return null;
  }

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
      const keyId = ids('apiKey');
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
      const stream = streams.apiKey(keyId);
      const created = await bus.handle(ctx, { lock: [stream], answer: firstOn(stream) }, startStream(stream, apiKeyDecider, (state) => apiKeyDecider.decide({ type: 'CreateApiKey', key: data }, state)));
      return { id: keyId, key, created };
    },

    /**
     * Revokes a key (CONTRACT.md §2): 404 `key_not_found` outside the business, 403
     * `insufficient_permissions` when `revoker` lacks one of the key's permissions, 409
     * `last_private_key` for the business's last active private key with keys:write unless
     * `force`; a key already revoked is left as it is (and `revoked` is told all the same). `options.revoker`: the revoking key's
     * permissions (null or absent: the CLI, no restriction); `options.force`: skip the last-key
     * rule (`loyalty keys revoke --force`).
     *
     * The last-key rule holds under concurrency, across processes, without a new stream: the
     * revocation is appended with a condition (`unchangedSince`) on the stream of another key that
     * still manages keys (the witness). A key's stream changes only when it is revoked, so the
     * append commits only while the witness is still active; two revocations of the last two such
     * keys each name the other as witness, and whichever commits second fails its condition,
     * decides again and answers 409. (A per-business key registry stream would need new events
     * and a backfill of every existing key; the condition needs neither. On KurrentDB conditions
     * are checked just before the append rather than atomically with it, as `append` documents.)
     *
     * @example await apiKeys.revoke(ctx, 'key_…', { revoker: principal.permissions })
     */
    async revoke(ctx: CommandContext, keyId: string, options: { revoker?: readonly string[] | null; force?: boolean } = {}): Promise<void> {
      const stream = streams.apiKey(keyId);
      await bus.handle(ctx, { lock: [stream] }, async (load) => {
        const key = await load(stream, apiKeyDecider);
        if (!key.state.exists || key.state.businessId !== ctx.businessId) throw errors.keyNotFound(keyId);
        const witness = !options.force && managesKeys(key.state) ? await anotherKeyManager(load, ctx.businessId, keyId) : null;
        const events = apiKeyDecider.decide(
          { type: 'RevokeApiKey', keyId, revoker: options.revoker ?? null, force: options.force ?? false, anotherKeyManager: witness !== null },
          key.state,
        );
        return [decidedWrite(stream, key, apiKeyDecider, events), ...(witness ? [unchangedSince(witness.stream, witness.loaded)] : [])];
      });
      await revoked?.();
    },
  };
}

export type ApiKeyCommands = ReturnType<typeof apiKeyCommands>;

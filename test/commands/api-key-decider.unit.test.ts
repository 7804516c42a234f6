import { describe, expect, it } from 'vitest';
import { type ApiKeyCommand, apiKeyDecider, type ApiKeyEvent, managesKeys } from '../../src/commands/api-key/api-key-decider.js';
import { fold } from '../../src/commands/decider.js';
import { deciderSpec } from '../support/decider-spec.js';

const { given } = deciderSpec(apiKeyDecider);

const key = {
  key_id: 'key_1',
  business_id: 'biz_1',
  type: 'private' as const,
  name: 'backend',
  permissions: ['customers:read', 'points:write'],
  key_hash: 'a'.repeat(64),
  key_hint: 'sk_live_…abcd',
};
const created: ApiKeyEvent = { type: 'ApiKeyCreated', data: key };
const revoked: ApiKeyEvent = { type: 'ApiKeyRevoked', data: { key_id: 'key_1' } };

describe('api key decider', () => {
  it('creates a key with everything it was given', () => {
    given().when({ type: 'CreateApiKey', key }).then([created]);
    expect(fold(apiKeyDecider, [created])).toEqual({ exists: true, businessId: 'biz_1', type: 'private', permissions: key.permissions, revoked: false });
  });

  it('refuses to create the same key twice with a conflict', () => {
    given(created).when({ type: 'CreateApiKey', key }).thenThrows('conflict', 409);
  });

  it('revokes a live key', () => {
    given(created).when({ type: 'RevokeApiKey', keyId: 'key_1' }).then([revoked]);
    expect(fold(apiKeyDecider, [created, revoked])).toEqual({ exists: true, businessId: 'biz_1', type: 'private', permissions: key.permissions, revoked: true });
  });

  it('emits nothing when revoking a key a second time', () => {
    given(created, revoked).when({ type: 'RevokeApiKey', keyId: 'key_1' }).then([]);
  });

  it('answers key_not_found when revoking a key that does not exist', () => {
    given().when({ type: 'RevokeApiKey', keyId: 'key_missing' }).thenThrows('key_not_found', 404);
  });
});

describe('api key decider: who may revoke what (CONTRACT §2)', () => {
  const ALL = ['customers:read', 'customers:write', 'points:read', 'points:write', 'rewards:read', 'rewards:write', 'webhooks:write', 'keys:write'];
  const manager: ApiKeyEvent = { type: 'ApiKeyCreated', data: { ...key, permissions: ALL } };
  const publicKey: ApiKeyEvent = { type: 'ApiKeyCreated', data: { ...key, type: 'public', permissions: ['customers:read', 'points:read', 'rewards:read'] } };
  const revoke = (options: Partial<Extract<ApiKeyCommand, { type: 'RevokeApiKey' }>> = {}): ApiKeyCommand => ({ type: 'RevokeApiKey', keyId: 'key_1', ...options });

  it('refuses a revoker lacking one of the key’s permissions with 403 insufficient_permissions, naming it', () => {
    const error = given(manager).when(revoke({ revoker: ['keys:write', 'customers:read'], anotherKeyManager: true })).thenThrows('insufficient_permissions', 403);
    expect(error.message).toContain('customers:write');
    given(created).when(revoke({ revoker: ['keys:write', 'customers:read'] })).thenThrows('insufficient_permissions', 403);
    given(publicKey).when(revoke({ revoker: ['keys:write'] })).thenThrows('insufficient_permissions', 403);
  });

  it('lets a revoker holding every permission of the key revoke it, and the CLI (no revoker) any key', () => {
    given(created).when(revoke({ revoker: ['keys:write', 'customers:read', 'points:write'] })).then([revoked]);
    given(publicKey).when(revoke({ revoker: ALL })).then([revoked]);
    given(manager).when(revoke({ revoker: null, anotherKeyManager: true })).then([revoked]);
  });

  it('refuses the business’s last active private key with keys:write with 409 last_private_key', () => {
    given(manager).when(revoke({ revoker: ALL })).thenThrows('last_private_key', 409);
    given(manager).when(revoke({ revoker: ALL, anotherKeyManager: false })).thenThrows('last_private_key', 409);
    given(manager).when(revoke()).thenThrows('last_private_key', 409);
  });

  it('revokes it while another such key remains, or with force', () => {
    given(manager).when(revoke({ revoker: ALL, anotherKeyManager: true })).then([revoked]);
    given(manager).when(revoke({ force: true })).then([revoked]);
  });

  it('applies the last-key rule to private keys with keys:write only', () => {
    given(created).when(revoke({ anotherKeyManager: false })).then([revoked]);
    given(publicKey).when(revoke({ anotherKeyManager: false })).then([revoked]);
  });

  it('answers a key already revoked with nothing, even when it was the last manager', () => {
    given(manager, revoked).when(revoke({ revoker: ALL })).then([]);
  });

  it('counts as managing keys only an active private key holding keys:write', () => {
    expect(managesKeys(fold(apiKeyDecider, [manager]))).toBe(true);
    expect(managesKeys(fold(apiKeyDecider, [manager, revoked]))).toBe(false);
    expect(managesKeys(fold(apiKeyDecider, [created]))).toBe(false);
    expect(managesKeys(fold(apiKeyDecider, [publicKey]))).toBe(false);
    expect(managesKeys(apiKeyDecider.initialState())).toBe(false);
  });
});

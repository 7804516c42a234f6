import { describe, expect, it } from 'vitest';
import { type ApiKeyCommand, apiKeyDecider, type ApiKeyEvent } from '../../src/commands/api-key/api-key-decider.js';
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
    expect(fold(apiKeyDecider, [created])).toEqual({ exists: true, businessId: 'biz_1', revoked: false });
  });

  it('refuses to create the same key twice with a conflict', () => {
    given(created).when({ type: 'CreateApiKey', key }).thenThrows('conflict', 409);
  });

  it('revokes a live key', () => {
    given(created).when({ type: 'RevokeApiKey', keyId: 'key_1' }).then([revoked]);
    expect(fold(apiKeyDecider, [created, revoked])).toEqual({ exists: true, businessId: 'biz_1', revoked: true });
  });

  it('emits nothing when revoking a key a second time', () => {
    given(created, revoked).when({ type: 'RevokeApiKey', keyId: 'key_1' }).then([]);
  });

  it('answers key_not_found when revoking a key that does not exist', () => {
    given().when({ type: 'RevokeApiKey', keyId: 'key_missing' }).thenThrows('key_not_found', 404);
  });
});

import { beforeAll, describe, expect, it } from 'vitest';
import type { ProcessStore } from '../e2e/process-helpers.js';
import { type ListedKey, parseStdout, type Provisioned, useStores } from './cli-support.js';
import { runInProcess } from './in-process.js';

const newStore = useStores();

describe('the loyalty command line', () => {
  describe.sequential('keys revoke and the last private key with keys:write', () => {
    let store: ProcessStore;
    let business: Provisioned;
    let firstKeyId: string;
    const listKeys = async () => {
      const list = await runInProcess(['keys', 'list', '--json'], store);
      expect(list.code, list.stderr).toBe(0);
      return parseStdout<ListedKey[]>(list);
    };
    const isRevoked = async (id: string) => (await listKeys()).find((k) => k.id === id)?.revoked_at !== null;

    beforeAll(async () => {
      store = await newStore();
      business = parseStdout<Provisioned>(await runInProcess(['init', '--json'], store));
      firstKeyId = (await listKeys()).find((k) => k.type === 'private')!.id;
    }, 120_000);

    it('revokes a private key with keys:write without --force while another one is left', async () => {
      const made = await runInProcess(['keys', 'create', '--type', 'private', '--json'], store);
      expect(made.code, made.stderr).toBe(0);
      const revoke = await runInProcess(['keys', 'revoke', firstKeyId], store);
      expect(revoke.code, revoke.stderr).toBe(0);
      expect(revoke.stdout).toBe(`Revoked ${firstKeyId}.\n`);
      expect(await isRevoked(firstKeyId)).toBe(true);
    }, 120_000);

    it('refuses the last one without --force (exit 1, the reason on stderr), and revokes it with --force', async () => {
      const last = (await listKeys()).find((k) => k.business_id === business.business_id && k.type === 'private' && k.revoked_at === null)!;
      const refused = await runInProcess(['keys', 'revoke', last.id], store);
      expect(refused.code).toBe(1);
      expect(refused.stdout).toBe('');
      // The command's reason, then how to do it anyway: one line.
      expect(refused.stderr).toMatch(/^loyalty: \S.* Use --force to revoke it anyway\.\n$/);
      expect(await isRevoked(last.id)).toBe(false);

      const forced = await runInProcess(['keys', 'revoke', last.id, '--force'], store);
      expect(forced.code, forced.stderr).toBe(0);
      expect(forced.stdout).toBe(`Revoked ${last.id}.\n`);
      expect(await isRevoked(last.id)).toBe(true);
    }, 120_000);
  });
});

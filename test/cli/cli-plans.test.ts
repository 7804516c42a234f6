import { beforeAll, describe, expect, it } from 'vitest';
import type { ProcessStore } from '../e2e/process-helpers.js';
import { parseStdout, type Provisioned, useStores } from './cli-support.js';
import { runInProcess } from './in-process.js';

const newStore = useStores();

describe('the loyalty command line', () => {
  describe.sequential('businesses set-plan', () => {
    let store: ProcessStore;
    let first: Provisioned;
    let second: Provisioned;

    beforeAll(async () => {
      store = await newStore();
      first = parseStdout<Provisioned>(await runInProcess(['init', '--business', 'First shop', '--plan', 'free', '--json'], store));
      second = parseStdout<Provisioned>(await runInProcess(['businesses', 'create', '--name', 'Second shop', '--json'], store));
    }, 120_000);

    it('businesses set-plan moves a business to another plan and back, each shown by businesses list; the plan it is on changes nothing', async () => {
      const planOf = async (id: string) => {
        const list = await runInProcess(['businesses', 'list', '--json'], store);
        expect(list.code, list.stderr).toBe(0);
        return parseStdout<Array<{ id: string; plan: string }>>(list).find((b) => b.id === id)?.plan;
      };
      const up = await runInProcess(['businesses', 'set-plan', first.business_id, 'unlimited'], store);
      expect(up.code, up.stderr).toBe(0);
      expect(up.stdout).toBe(`Business ${first.business_id} is now on the unlimited plan (0 customers).\n`);
      expect(await planOf(first.business_id)).toBe('unlimited');

      const again = await runInProcess(['businesses', 'set-plan', first.business_id, 'unlimited'], store);
      expect(again.code, again.stderr).toBe(0);
      expect(again.stdout).toMatch(/already on the unlimited plan/);

      const down = await runInProcess(['businesses', 'set-plan', first.business_id, 'free'], store);
      expect(down.code, down.stderr).toBe(0);
      expect(down.stdout).toBe(`Business ${first.business_id} is now on the free plan (0 customers; the free plan allows 1000).\n`);
      expect(await planOf(first.business_id)).toBe('free');
    }, 120_000);

    it('businesses set-plan refuses an unknown business with exit 1 and one line naming it, and a plan that does not exist', async () => {
      const unknown = await runInProcess(['businesses', 'set-plan', 'biz_doesnotexist0000', 'unlimited'], store);
      expect(unknown.code).toBe(1);
      expect(unknown.stderr).toBe("loyalty: No business with id 'biz_doesnotexist0000'.\n");
      expect(unknown.stdout).toBe('');

      const badPlan = await runInProcess(['businesses', 'set-plan', second.business_id, 'gold'], store);
      expect(badPlan.code).toBe(1);
      expect(badPlan.stderr).toMatch(/'gold' is invalid.*choices are free, unlimited/);
    }, 120_000);
  });
});

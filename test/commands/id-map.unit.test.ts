import { describe, expect, it } from 'vitest';
import { IdMap } from '../../src/commands/customer/id-map.js';
import { idHash } from '../../src/commands/customer/lot-ledger.js';

describe('IdMap: a customer\'s ids to values, persistent', () => {
  it('sets, overwrites and gets, leaving every map before it as it was', () => {
    const empty = IdMap.empty<string>();
    const one = empty.set('txn_a', 'not_credit');
    const two = one.set('txn_b', 'empty_credit');
    const overwritten = two.set('txn_a', 'empty_credit');
    expect([empty.get('txn_a'), one.get('txn_a'), two.get('txn_b'), overwritten.get('txn_a'), overwritten.get('txn_c')]).toEqual([
      undefined,
      'not_credit',
      'empty_credit',
      'empty_credit',
      undefined,
    ]);
    expect([empty.size, one.size, two.size, overwritten.size]).toEqual([0, 1, 2, 2]);
    expect(two.get('txn_a')).toBe('not_credit');
  });

  it('keeps ids whose hashes collide apart', () => {
    const [a, b] = ['txn_00000000000000002rnw', 'txn_0000000000000000jpba'];
    expect(idHash(a)).toBe(idHash(b));
    const both = IdMap.empty<number>().set(a, 1).set(b, 2);
    expect([both.get(a), both.get(b), both.size]).toEqual([1, 2, 2]);
    const changed = both.set(a, 3);
    expect([changed.get(a), changed.get(b), changed.size, both.get(a)]).toEqual([3, 2, 2, 1]);
    expect(changed.values().sort()).toEqual([2, 3]);
    expect(IdMap.fromJSON(JSON.parse(JSON.stringify(changed))).toJSON()).toEqual({ [a]: 3, [b]: 2 });
  });

  it('goes into a snapshot as a plain object of ids, and comes back from one', () => {
    let map = IdMap.empty<{ cancelled: boolean }>();
    for (let i = 0; i < 100; i++) map = map.set(`red_${i}`, { cancelled: i % 3 === 0 });
    const json = JSON.parse(JSON.stringify({ redemptions: map })).redemptions;
    expect(Object.keys(json)).toHaveLength(100);
    expect(json.red_3).toEqual({ cancelled: true });
    const back = IdMap.fromJSON<{ cancelled: boolean }>(json);
    expect(back.size).toBe(100);
    for (let i = 0; i < 100; i++) expect(back.get(`red_${i}`)).toEqual({ cancelled: i % 3 === 0 });
  });
});

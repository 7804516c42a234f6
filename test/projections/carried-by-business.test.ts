import { describe, expect, it } from 'vitest';
import { type BatchSpan, CarriedByBusiness } from '../../src/projections/carried-by-business.js';

const span = (carried: CarriedByBusiness, from: number, to: number): BatchSpan => ({ from: { globalPosition: BigInt(from) }, to: { globalPosition: BigInt(to) }, carried });

/** A table of one number per business, read as a batch would, counting the businesses read. */
function table(rows: Record<string, number>) {
  const reads: string[][] = [];
  return {
    reads,
    rows,
    read: async (businesses: string[]) => {
      reads.push(businesses);
      return new Map(businesses.flatMap((b) => (b in rows ? [[b, rows[b]!] as const] : [])));
    },
  };
}
const copy = (n: number) => n;

describe('CarriedByBusiness', () => {
  it('reads a business once while each batch starts where the last one ended, and takes over what the last batch left', async () => {
    const carried = new CarriedByBusiness();
    const t = table({ a: 1 });
    const first = await CarriedByBusiness.take(span(carried, 0, 5), ['a', 'b'], t.read, copy);
    expect([...first]).toEqual([['a', 1], ['b', undefined]]);
    first.set('b', 7); // the batch's events gave b a row
    CarriedByBusiness.leave(span(carried, 0, 5), first);

    const second = await CarriedByBusiness.take(span(carried, 5, 9), ['a', 'b'], t.read, copy);
    expect([...second]).toEqual([['a', 1], ['b', 7]]);
    expect(t.reads).toEqual([['a', 'b']]);
  });

  it('reads again when the batch before did not commit, or another process applied batches in between', async () => {
    const carried = new CarriedByBusiness();
    const t = table({ a: 1 });
    const first = await CarriedByBusiness.take(span(carried, 0, 5), ['a'], t.read, copy);
    first.set('a', 2);
    CarriedByBusiness.leave(span(carried, 0, 5), first); // rolled back: the next batch starts at 0 again
    expect([...(await CarriedByBusiness.take(span(carried, 0, 5), ['a'], t.read, copy))]).toEqual([['a', 1]]);
    expect(t.reads).toEqual([['a']]); // still exact at 0: nothing read

    t.rows.a = 3; // another process moved the checkpoint to 8
    expect([...(await CarriedByBusiness.take(span(carried, 8, 9), ['a'], t.read, copy))]).toEqual([['a', 3]]);
    expect(t.reads).toEqual([['a'], ['a']]);
  });

  it('gives the batch copies, so that a batch that does not commit changes nothing kept', async () => {
    const carried = new CarriedByBusiness();
    const rows = new Map([['a', { n: 1 }]]);
    const read = async () => rows;
    const take = () => CarriedByBusiness.take(span(carried, 0, 5), ['a'], read, (v) => ({ ...v }));
    (await take()).get('a')!.n = 99;
    expect((await take()).get('a')).toEqual({ n: 1 });
  });

  it('reads everything without a span (a rebuild)', async () => {
    const t = table({ a: 1 });
    await CarriedByBusiness.take(undefined, ['a'], t.read, copy);
    await CarriedByBusiness.take(undefined, ['a'], t.read, copy);
    expect(t.reads).toEqual([['a'], ['a']]);
  });
});

import { afterEach, describe, expect, it } from 'vitest';
import { eventVersion } from '../../src/events/catalogue.js';
import { decode, decodeAll, UndecodableEvent, UPCASTERS } from '../../src/events/decode.js';

const earned = {
  transaction_id: 'txn_1',
  amount: 120,
  balance: 120,
  base_amount: 100,
  multiplier: 1.2,
  description: null,
  reference: null,
  metadata: {},
};
/** What the data of an earn written before lots existed decodes to: no lot times, read as null. */
const earnedDecoded = { ...earned, available_at: null, expires_at: null };
const EVENT_VERSION = eventVersion('PointsEarned');
const stored = (type: string, data: unknown, version = EVENT_VERSION) => ({ type, data, streamId: 'customer-c1', metadata: { event_version: version } });

describe('decoding events read from the log', () => {
  afterEach(() => {
    delete UPCASTERS.PointsEarned;
  });

  it('parses the data with the catalogue schema and keeps the rest of the envelope', () => {
    const decoded = decode(stored('PointsEarned', earned));
    expect(decoded).toEqual(stored('PointsEarned', earnedDecoded));
    if (decoded?.type !== 'PointsEarned') throw new Error('narrowed to PointsEarned');
    expect(decoded.data.amount).toBe(120);
  });

  it('skips a type the catalogue does not know (a newer release wrote it), as readers always did', () => {
    expect(decode(stored('SomethingNew', { x: 1 }))).toBeNull();
    expect(decodeAll([stored('SomethingNew', {}), stored('PointsEarned', earned)]).map((e) => e.type)).toEqual(['PointsEarned']);
  });

  it('refuses data its schema refuses, naming the type and version', () => {
    expect(() => decode(stored('PointsEarned', { ...earned, amount: 'many' }))).toThrow(UndecodableEvent);
    expect(() => decode(stored('PointsEarned', { ...earned, amount: 'many' }))).toThrow(/PointsEarned v1/);
  });

  it('upcasts data written at an older version before parsing, and refuses one it has no upcaster for', () => {
    const { description, ...rest } = earned;
    const v0 = { ...rest, note: description };
    expect(() => decode(stored('PointsEarned', v0, EVENT_VERSION - 1))).toThrow(/no upcaster from version 0/);
    UPCASTERS.PointsEarned = { [EVENT_VERSION - 1]: (data) => {
      const { note, ...others } = data as { note: string | null };
      return { ...others, description: note };
    } };
    expect(decode(stored('PointsEarned', v0, EVENT_VERSION - 1))?.data).toEqual(earnedDecoded);
  });

  it('reads a PointsExpired of version 1 (one lot) as version 2 with that lot alone in `lots` and `pending` unknown; version 2 as written', () => {
    const v1 = { transaction_id: 'txn_e', lot_transaction_id: 'txn_lot', amount: 40, balance: 60, expired_at: '2030-01-01T00:00:00.000Z' };
    const v2 = { transaction_id: 'txn_e', lots: [{ transaction_id: 'txn_lot', amount: 40 }], amount: 40, pending: 0, balance: 60, expired_at: '2030-01-01T00:00:00.000Z' };
    expect(eventVersion('PointsExpired')).toBe(2);
    expect(decode(stored('PointsExpired', v1, 1))?.data).toEqual({ ...v2, pending: null }); // whether it was pending: the lot's status tells
    expect(decode(stored('PointsExpired', v2, 2))?.data).toEqual(v2);
    expect(() => decode(stored('PointsExpired', { ...v2, lots: [] }, 2))).toThrow(/PointsExpired v2/);
  });
});

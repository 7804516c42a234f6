import { describe, expect, it } from 'vitest';
import { fold } from '../../src/commands/decider.js';
import {
  type ReservationCommand,
  reservationDecider,
  type ReservationEvent,
  ReservationTaken,
} from '../../src/commands/reservation/reservation-decider.js';
import type { EventOf } from '../../src/events/catalogue.js';

type Claim = EventOf<'ReservationClaimed'>['data'];

// given events → when command → then events (or the ReservationTaken it throws).
function given(...events: ReservationEvent[]) {
  const state = fold(reservationDecider, events);
  return {
    when: (command: ReservationCommand) => ({
      then: (expected: ReservationEvent[]) => expect(reservationDecider.decide(command, state)).toEqual(expected),
      thenTakenBy: (holder: Claim) => {
        let caught: unknown;
        try {
          reservationDecider.decide(command, state);
        } catch (error) {
          caught = error;
        }
        expect(caught, 'expected ReservationTaken').toBeInstanceOf(ReservationTaken);
        expect((caught as ReservationTaken).holder).toEqual(holder);
      },
    }),
  };
}

const email = (owner: string): Claim => ({ kind: 'email', value: 'ann@example.com', owner_id: owner, record: null });
const reference = (owner: string): Claim => ({
  kind: 'reference',
  value: 'order-42',
  owner_id: owner,
  record: { kind: 'transaction', id: `txn_of_${owner}` },
});
const claimed = (claim: Claim): ReservationEvent => ({ type: 'ReservationClaimed', data: claim });
const released = (owner: string): ReservationEvent => ({ type: 'ReservationReleased', data: { owner_id: owner } });
const claim = (c: Claim): ReservationCommand => ({ type: 'Claim', claim: c });
const release = (owner: string): ReservationCommand => ({ type: 'Release', ownerId: owner });

describe('reservation decider', () => {
  it('claims a free value', () => {
    given().when(claim(email('cust_a'))).then([claimed(email('cust_a'))]);
    given().when(claim(reference('cust_a'))).then([claimed(reference('cust_a'))]);
    expect(fold(reservationDecider, [claimed(email('cust_a'))])).toEqual({ holder: email('cust_a') });
  });

  it('refuses a value held by another owner, carrying the holder', () => {
    given(claimed(email('cust_a'))).when(claim(email('cust_b'))).thenTakenBy(email('cust_a'));
    given(claimed(reference('cust_a'))).when(claim(reference('cust_b'))).thenTakenBy(reference('cust_a'));
  });

  it('emits nothing when the owner claims its own email again', () => {
    given(claimed(email('cust_a'))).when(claim(email('cust_a'))).then([]);
    given(claimed({ ...email('cust_a'), kind: 'external_reference' }))
      .when(claim({ ...email('cust_a'), kind: 'external_reference' }))
      .then([]);
  });

  it('refuses a reference claimed a second time even by its owner, carrying the original record', () => {
    given(claimed(reference('cust_a'))).when(claim({ ...reference('cust_a'), record: { kind: 'transaction', id: 'txn_retry' } })).thenTakenBy(
      reference('cust_a'),
    );
  });

  it('frees a value released by its owner, so another owner can then claim it', () => {
    given(claimed(email('cust_a'))).when(release('cust_a')).then([released('cust_a')]);
    expect(fold(reservationDecider, [claimed(email('cust_a')), released('cust_a')])).toEqual({ holder: null });
    given(claimed(email('cust_a')), released('cust_a')).when(claim(email('cust_b'))).then([claimed(email('cust_b'))]);
  });

  it('emits nothing when someone other than the holder releases the value', () => {
    given(claimed(email('cust_a'))).when(release('cust_b')).then([]);
  });

  it('emits nothing when a free value is released', () => {
    given().when(release('cust_a')).then([]);
    given(claimed(email('cust_a')), released('cust_a')).when(release('cust_a')).then([]);
  });
});

import type { EventOf } from '../../events/catalogue.js';
import type { Decider } from '../decider.js';

export type ReservationEvent = EventOf<'ReservationClaimed' | 'ReservationReleased'>;
type Claim = EventOf<'ReservationClaimed'>['data'];

export type ReservationCommand =
  | { type: 'Claim'; claim: Claim }
  | { type: 'Release'; ownerId: string };

/** Who holds a unique value now (null: free), and the record claimed under it. */
export interface ReservationState {
  holder: Claim | null;
}

/** Thrown when the value is held by someone else; carries the holder's claim. */
export class ReservationTaken extends Error {
  constructor(readonly holder: Claim) {
    super(`${holder.kind} '${holder.value}' is held by ${holder.owner_id}`);
  }
}

export const reservationDecider: Decider<ReservationCommand, ReservationState, ReservationEvent> = {
  initialState: () => ({ holder: null }),

  evolve(state, event) {
    switch (event.type) {
      case 'ReservationClaimed':
        return { holder: event.data };
      case 'ReservationReleased':
        return { holder: null };
      default: {
        const exhaustive: never = event;
        return exhaustive;
      }
    }
  },

  decide(command, state) {
    switch (command.type) {
      case 'Claim':
        if (state.holder) {
          if (state.holder.owner_id === command.claim.owner_id && command.claim.kind !== 'reference') return [];
          throw new ReservationTaken(state.holder);
        }
        return [{ type: 'ReservationClaimed', data: command.claim }];
      case 'Release':
        return state.holder?.owner_id === command.ownerId
          ? [{ type: 'ReservationReleased', data: { owner_id: command.ownerId } }]
          : [];
      default: {
        const exhaustive: never = command;
        return exhaustive;
      }
    }
  },
};

import type { z } from 'zod';
import { ApiKeyEvents } from './api-key-events.js';
import { BusinessEvents } from './business-events.js';
import { CustomerEvents } from './customer-events.js';
import { ProgramEvents } from './program-events.js';
import { ReservationEvents } from './reservation-events.js';
import { RewardEvents } from './reward-events.js';
import { WebhookEvents } from './webhook-events.js';

/**
 * Every event type the service writes, with the zod schema of its data at its current version
 * (`eventVersion`); data written at an earlier version is upcast as it is read (src/events/decode.ts),
 * and stored events are never rewritten.
 */
export const EventCatalogue = {
  ...BusinessEvents,
  ...ApiKeyEvents,
  ...ReservationEvents,
  ...CustomerEvents,
  ...ProgramEvents,
  ...RewardEvents,
  ...WebhookEvents,
};

export type EventType = keyof typeof EventCatalogue;

/** The types whose data changed shape since their version 1, at their current version. */
export const EVENT_VERSIONS: { readonly [T in EventType]?: number } = {
  // 2: one event for all the lots of a customer expiring at one instant (`lots`), not one per lot.
  PointsExpired: 2,
};

/** The current version of a type's data: what new events are written at. */
export function eventVersion(type: EventType): number {
  return EVENT_VERSIONS[type] ?? 1;
}
export type EventData<T extends EventType> = z.infer<(typeof EventCatalogue)[T]>;

/** A domain event as deciders produce it: a tagged union over the catalogue. */
export type DomainEvent = { [T in EventType]: { type: T; data: EventData<T> } }[EventType];
export type EventOf<T extends EventType> = Extract<DomainEvent, { type: T }>;

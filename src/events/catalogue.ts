import type { z } from 'zod';
import { ApiKeyEvents } from './api-key-events.js';
import { BusinessEvents } from './business-events.js';
import { CustomerEvents } from './customer-events.js';
import { ProgramEvents } from './program-events.js';
import { ReservationEvents } from './reservation-events.js';
import { RewardEvents } from './reward-events.js';
import { WebhookEvents } from './webhook-events.js';

/**
 * Every event type the service writes, with the zod schema of its data. The current version of
 * each is 1; a later version gets an upcaster here, and stored events are never rewritten.
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

export const EVENT_VERSION = 1;

export type EventType = keyof typeof EventCatalogue;
export type EventData<T extends EventType> = z.infer<(typeof EventCatalogue)[T]>;

/** A domain event as deciders produce it: a tagged union over the catalogue. */
export type DomainEvent = { [T in EventType]: { type: T; data: EventData<T> } }[EventType];
export type EventOf<T extends EventType> = Extract<DomainEvent, { type: T }>;

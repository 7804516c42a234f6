import { type EventData, type EventType, EventCatalogue, eventVersion } from './catalogue.js';

/** Turns an event's data as written at one version into the next version's shape. */
export type Upcaster = (data: unknown) => unknown;

/**
 * Where a changed event type keeps its past: `UPCASTERS[type][v]` turns data written at version `v`
 * into version `v + 1`'s. Reading applies them in turn up to the type's `eventVersion`, then
 * parses; stored events are never rewritten.
 */
export const UPCASTERS: { [T in EventType]?: Readonly<Record<number, Upcaster>> } = {
  PointsExpired: {
    // v1 expired one lot; v2 names every lot of the customer that expired at the instant.
    1: (data) => {
      const { lot_transaction_id, ...rest } = data as { lot_transaction_id: string; amount: number };
      // Whether the lot was pending is not in the data: readers tell it from the lot's status then.
      return { ...rest, lots: [{ transaction_id: lot_transaction_id, amount: rest.amount }], pending: null };
    },
  },
};

/** An event read from the log whose `type` and `data` were decoded; the envelope `E` keeps its other fields. */
export type Decoded<E extends { type: string }> = { [T in EventType]: Omit<E, 'type' | 'data'> & { type: T; data: EventData<T> } }[EventType];

/** One event type's case of `Decoded<E>`. */
export type DecodedOf<E extends { type: string }, T extends EventType> = Extract<Decoded<E>, { type: T }>;

/** Malformed data under a catalogued type: the log holds something the service never wrote. */
export class UndecodableEvent extends Error {
  constructor(type: string, version: number, reason: string) {
    super(`cannot decode ${type} v${version}: ${reason}`);
    this.name = 'UndecodableEvent';
  }
}

export function isCatalogued(type: string): type is EventType {
  return Object.hasOwn(EventCatalogue, type);
}

/** Data of `type` written at `version`, upcast to the current version and parsed with its schema. */
export function decodeData<T extends EventType>(type: T, data: unknown, version: number = eventVersion(type)): EventData<T> {
  let current = data;
  for (let v = version, to = eventVersion(type); v < to; v++) {
    const upcast = UPCASTERS[type]?.[v];
    if (!upcast) throw new UndecodableEvent(type, version, `no upcaster from version ${v}`);
    current = upcast(current);
  }
  const parsed = EventCatalogue[type].safeParse(current);
  if (!parsed.success) throw new UndecodableEvent(type, version, parsed.error.message);
  return parsed.data as EventData<T>;
}

/**
 * `event` with its data decoded (see `decodeData`); null for a type the catalogue does not know
 * (written by a newer release, say), which readers skip as they always did.
 *
 * @example
 * const decoded = decode(storedEvent);
 * if (decoded?.type === 'PointsEarned') decoded.data.amount; // typed
 */
export function decode<E extends { type: string; data?: unknown; metadata?: { event_version?: number } }>(event: E): Decoded<E> | null {
  if (!isCatalogued(event.type)) return null;
  return { ...event, data: decodeData(event.type, event.data, event.metadata?.event_version) } as Decoded<E>;
}

/** The catalogued events of `events`, decoded, in order. */
export function decodeAll<E extends { type: string; data?: unknown; metadata?: { event_version?: number } }>(events: readonly E[]): Array<Decoded<E>> {
  const decoded: Array<Decoded<E>> = [];
  for (const event of events) {
    const d = decode(event);
    if (d) decoded.push(d);
  }
  return decoded;
}

/**
 * A type guard for events of `types`: narrows a decoded event (or a union of them) to those cases.
 *
 * @example
 * const isCustomerEvent = ofTypes(Object.keys(CustomerEvents));
 */
export function ofTypes<T extends EventType>(types: readonly T[]) {
  const set = new Set<string>(types);
  return <E extends { type: string }>(event: E): event is Extract<E, { type: T }> => set.has(event.type);
}

import type { Transaction } from 'kysely';
import type { Database } from '../db/schema.js';
import type { EventType } from '../events/catalogue.js';
import type { Decoded, DecodedOf } from '../events/decode.js';
import type { ProjectionSourceEvent } from '../store/event-store.js';
import type { BatchSpan } from './carried-by-business.js';

/** An event as projectors get it: read from the log and decoded once (src/events/decode.ts). */
export type ProjectedEvent = Decoded<ProjectionSourceEvent>;

/** One event type's case of `ProjectedEvent`. */
export type ProjectedEventOf<T extends EventType> = DecodedOf<ProjectionSourceEvent, T>;

/**
 * A projector's handlers, keyed by the event types it handles: each gets its event with the data
 * typed for that type, and the batch's state `B` (what `begin` made).
 */
export type Handlers<B> = { [T in EventType]?: (event: ProjectedEventOf<T>, batch: B) => void | Promise<void> };

/**
 * Turns events into read-model rows. It writes only through the transaction it is given, which
 * also moves the projector's checkpoint: the read model and its position commit together.
 *
 * `applyBatch` is set-based where it pays: handlers collect rows into the batch state and `end`
 * writes them in a few statements, whatever the batch's size. Either way the rows it leaves are
 * the same as applying the events one by one, in order. Build one with `defineProjector`.
 */
export interface Projector {
  name: string;
  /** The event types it handles: the keys of its handler map. */
  handles: ReadonlySet<EventType>;
  /** The read-model tables it alone writes: what `loyalty projections rebuild` replaces. */
  tables: readonly string[];
  /**
   * A reactor's rows cause effects outside the database (webhook deliveries): replaying it would
   * repeat them, so it is never rebuilt.
   */
  reactor?: boolean;
  /**
   * The events given are all handled by the projector, in log order. `span`: where the batch
   * starts and ends in the log (none in a rebuild), for what a projector carries between batches.
   */
  applyBatch(events: readonly ProjectedEvent[], trx: Transaction<Database>, span?: BatchSpan, ahead?: unknown): Promise<Applied>;
  /**
   * For a rebuild's pipeline (optional): sends now, ahead of the writes `applied` (the batch just
   * applied, as `applyBatch` answered it) left waiting, the reads the batch of `next` would make as
   * it begins, and corrects their answer for those writes; what it answers is handed to
   * `applyBatch` of `next` as `ahead`. So the next page's reads need not wait for the page before's
   * writes, and its JavaScript runs while they do.
   */
  readAhead?(next: readonly ProjectedEvent[], trx: Transaction<Database>, applied: Applied): unknown;
}

/** What `applyBatch` answers: the batch's state, for the projector's own `readAhead` of the batch after it. */
export type Applied = { readonly [batchState]: true } | undefined;
declare const batchState: unique symbol;

export interface ProjectorSpec<B, A = never> {
  name: string;
  tables: readonly string[];
  reactor?: boolean;
  /** The state of one batch (it may read what the batch's events need); handlers reach the transaction through it. */
  begin(trx: Transaction<Database>, events: readonly ProjectedEvent[], span: BatchSpan | undefined, ahead?: A): B | Promise<B>;
  on: Handlers<B>;
  /** Writes what the handlers collected (set-based statements), after the last event of the batch. */
  end?(batch: B): Promise<void>;
  /** See `Projector.readAhead`: `previous` is the batch before `events`, applied, its writes still waiting; the answer goes to `begin`. */
  readAhead?(trx: Transaction<Database>, events: readonly ProjectedEvent[], previous: B): A;
}

/**
 * A projector from a handler map: `handles` is the map's keys, and each event goes to the handler
 * of its type, in log order.
 *
 * @example
 * defineProjector({
 *   name: 'access', tables: ['api_keys'], begin: (trx) => ({ trx }),
 *   on: { ApiKeyRevoked: async (event, { trx }) => { await trx.updateTable('api_keys')… .where('id', '=', event.data.key_id) } },
 * });
 */
export function defineProjector<B, A = never>(spec: ProjectorSpec<B, A>): Projector {
  const handlers = spec.on;
  return {
    name: spec.name,
    tables: spec.tables,
    ...(spec.reactor ? { reactor: true } : {}),
    handles: new Set(Object.keys(handlers) as EventType[]),
    async applyBatch(events, trx, span, ahead) {
      const batch = await spec.begin(trx, events, span, ahead as A | undefined);
      for (let i = 0; i < events.length; i++) {
        const event = events[i]!;
        const pending = handlerOf(handlers, event)?.(event, batch);
        if (pending) await pending; // most handlers only collect rows: no await per event for them
        if (i % TURN_EVERY === TURN_EVERY - 1) await nextTurn();
      }
      await spec.end?.(batch);
      return batch as unknown as Applied;
    },
    ...(spec.readAhead ? { readAhead: (next, trx, applied) => spec.readAhead!(trx, next, applied as unknown as B) } : {}),
  };
}

/**
 * Events a batch handles before it lets the event loop take a turn: a big batch (a rebuild's page)
 * is tens of milliseconds of JavaScript, and each statement the batch before it has out (a copy
 * waits for the server's go-ahead before its rows, then for its answer) moves only on a turn.
 */
const TURN_EVERY = 500;
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** The handler of `event`'s type, typed for that event (TypeScript cannot relate a union's key and value by itself). */
function handlerOf<B>(handlers: Handlers<B>, event: ProjectedEvent): ((event: ProjectedEvent, batch: B) => void | Promise<void>) | undefined {
  return handlers[event.type] as ((event: ProjectedEvent, batch: B) => void | Promise<void>) | undefined;
}

/** Applies the events this projector handles, in order, through `trx` (`ahead`: what its `readAhead` answered for them). */
export async function applyEvents(projector: Projector, events: readonly ProjectedEvent[], trx: Transaction<Database>, span?: BatchSpan, ahead?: unknown): Promise<Applied> {
  const handled = handledBy(projector, events);
  return handled.length > 0 ? projector.applyBatch(handled, trx, span, ahead) : undefined;
}

/**
 * The projector's `readAhead` of the events of `next` it handles, after the batch it answered
 * `applied` for; undefined when it has none, applied nothing, or handles nothing of `next`.
 */
export function readAhead(projector: Projector, applied: Applied, next: readonly ProjectedEvent[], trx: Transaction<Database>): unknown {
  if (!projector.readAhead || applied === undefined) return undefined;
  const handled = handledBy(projector, next);
  return handled.length > 0 ? projector.readAhead(handled, trx, applied) : undefined;
}

/** The events of `events` the projector handles, in order. */
const handledBy = (projector: Projector, events: readonly ProjectedEvent[]) => events.filter((e) => projector.handles.has(e.type));

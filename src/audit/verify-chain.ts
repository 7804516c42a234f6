import type { StoredEvent } from '../store/event-store.js';
import { eventHash, GENESIS_HASH } from '../store/hash-chain.js';

/** A place where a stream's hash chain does not hold. */
export interface ChainBreak {
  stream: string;
  position: number;
  problem: string;
}

interface StreamHead {
  position: number;
  hash: string;
}

/**
 * Checks hash chains event by event, for any number of interleaved streams (feed it `readAll`
 * order or one stream's events). Pure: no I/O.
 *
 * After a break it goes on from the *stored* hash, so one edited event is reported once, at its
 * own position, instead of at every event after it.
 */
export class ChainVerifier {
  private readonly heads = new Map<string, StreamHead>();
  readonly breaks: ChainBreak[] = [];
  events = 0;

  get streams(): number {
    return this.heads.size;
  }

  check(event: StoredEvent): void {
    this.events++;
    const stream = event.streamId;
    const head = this.heads.get(stream) ?? { position: -1, hash: GENESIS_HASH };
    const fail = (problem: string) => this.breaks.push({ stream, position: event.streamPosition, problem });
    if (event.streamPosition !== head.position + 1) {
      fail(`expected position ${head.position + 1} next (an event is missing or out of order)`);
    }
    const { prev_hash: prevHash, hash } = event.metadata as unknown as { prev_hash?: string; hash?: string };
    if (prevHash !== head.hash) {
      fail(`prev_hash is ${short(prevHash)}, but the event before it hashes to ${short(head.hash)}`);
    }
    const computed = eventHash(prevHash ?? head.hash, {
      stream_id: stream,
      stream_position: event.streamPosition,
      event_id: event.eventId,
      type: event.type,
      data: event.data,
      metadata: event.metadata as unknown as Record<string, unknown>,
    });
    if (hash !== computed) fail(`stored hash ${short(hash)} but its content hashes to ${short(computed)} (the event was altered)`);
    this.heads.set(stream, { position: event.streamPosition, hash: hash ?? computed });
  }

  /**
   * Compares where each stream ended with the store's own record of its head (`streamHeads`;
   * on PostgreSQL the `streams` table): catches events removed from the end of a stream.
   */
  checkHeads(recorded: Iterable<{ stream: string; version: number; lastHash: string }>): void {
    for (const { stream, version, lastHash } of recorded) {
      const head = this.heads.get(stream) ?? { position: -1, hash: GENESIS_HASH };
      if (head.position !== version) {
        this.breaks.push({ stream, position: version, problem: `the stream ends at position ${head.position}, but the store recorded ${version} as its last` });
      } else if (head.hash !== lastHash) {
        this.breaks.push({ stream, position: version, problem: `the last hash is ${short(head.hash)}, but the store recorded ${short(lastHash)}` });
      }
    }
  }
}

function short(hash: string | undefined): string {
  return hash === undefined ? '(none)' : `${hash.slice(0, 12)}…`;
}

import { describe, expect, it } from 'vitest';
import { SNAPSHOT_EVERY, SNAPSHOT_ON_LEAVING, StateCache } from '../../src/commands/state-cache.js';
import type { AppendResult } from '../../src/store/event-store.js';

/** A queued append the test settles by hand. */
function queued() {
  let commit!: () => void;
  let fail!: (error: Error) => void;
  const appended = new Promise<AppendResult>((resolve, reject) => {
    commit = () => resolve({ position: { globalPosition: 1n }, revisions: {} });
    fail = reject;
  });
  appended.catch(() => {});
  return { appended, commit, fail };
}

const settled = () => new Promise((resolve) => setTimeout(resolve, 0));

describe('state cache: the committed baseline of a stream with queued appends', () => {
  it('moves up to each append of a chain as it commits, while later ones are still queued', async () => {
    const cache = new StateCache();
    cache.set('s', { n: 0 }, 0);
    const first = queued();
    const second = queued();
    cache.setQueued('s', { n: 1 }, 1, first.appended);
    cache.setQueued('s', { n: 2 }, 2, second.appended);
    expect(await cache.baseline('s')).toEqual({ state: { n: 0 }, revision: 0 });

    first.commit();
    await settled();
    expect(await cache.baseline('s')).toEqual({ state: { n: 1 }, revision: 1 });
    // A chain that keeps growing keeps the newest commit as its baseline.
    const third = queued();
    cache.setQueued('s', { n: 3 }, 3, third.appended);
    expect(await cache.baseline('s')).toEqual({ state: { n: 1 }, revision: 1 });

    second.commit();
    await settled();
    expect(await cache.baseline('s')).toEqual({ state: { n: 2 }, revision: 2 });
    third.commit();
    await settled();
    expect(await cache.baseline('s')).toEqual({ state: { n: 3 }, revision: 3 });
  });

  it('does not move to a state that was decided again (superseded), nor backwards', async () => {
    const cache = new StateCache();
    cache.set('s', { n: 0 }, 0);
    const first = queued();
    const entry = cache.setQueued('s', { n: 1 }, 1, first.appended);
    const later = queued();
    cache.setQueued('s', { n: 2 }, 2, later.appended);
    entry.superseded = true;
    first.commit();
    await settled();
    expect(await cache.baseline('s')).toEqual({ state: { n: 0 }, revision: 0 });
  });

  it('lets go of a superseded state nothing replaced once its append settles (a decision made again that wrote nothing to the stream)', async () => {
    const cache = new StateCache();
    cache.set('s', { n: 0 }, 0);
    const append = queued();
    const entry = cache.setQueued('s', { n: 1 }, 1, append.appended);
    // Decided again inside its batch: due work already done by another command, nothing left to append.
    entry.superseded = true;
    append.commit();
    await settled();
    // Left in memory with its settled append, `get` would wait for it again and again, for ever
    // (one server process stuck at 100% CPU, found by hand with two deployments on one database).
    expect(cache.peek('s')).toBeUndefined();
  });
});

describe('state cache: bounded by what its states weigh', () => {
  const weigh = (state: unknown) => (state as { weight: number }).weight;

  /** What a command does: counts a use of the stream (`touch`), then remembers the state it loaded or made. */
  const load = (cache: StateCache, stream: string, state: unknown, revision = 0) => {
    cache.touch(stream);
    cache.set(stream, state, revision);
  };

  it('lets the least recently used states go for a newcomer used more often lately, once they weigh more than the bound together', async () => {
    const cache = new StateCache(100, undefined, { weigh, max: 10 });
    load(cache, 'a', { weight: 4 });
    load(cache, 'b', { weight: 4 });
    load(cache, 'a', { weight: 4 }); // used: 'b' is now the least recently used
    cache.touch('c'); // 'c' was used before, and is used again: twice against 'b''s once
    load(cache, 'c', { weight: 4 });
    expect(cache.peek('b')).toBeUndefined();
    expect(cache.peek('c')?.state).toEqual({ weight: 4 });
    expect(cache.peek('a')?.state).toEqual({ weight: 4 });
    expect(cache.weightHeld).toBe(8);
    // A state heavier than the bound alone stays: it is the one in use. The bound applies to the others.
    load(cache, 'huge', { weight: 50 });
    expect(cache.peek('huge')?.state).toEqual({ weight: 50 });
    expect(cache.weightHeld).toBe(58);
  });

  it('keeps a newcomer used no more often lately than the least recently used out, and the others in', async () => {
    const cache = new StateCache(100, undefined, { weigh, max: 10 });
    load(cache, 'a', { weight: 4 });
    load(cache, 'b', { weight: 4 });
    load(cache, 'c', { weight: 4 });
    expect(cache.peek('c')).toBeUndefined();
    expect([cache.peek('a')?.state, cache.peek('b')?.state]).toEqual([{ weight: 4 }, { weight: 4 }]);
    expect(cache.weightHeld).toBe(8);
    // Nor a queued state of a newcomer: the next command on it reads the store.
    const append = queued();
    cache.touch('d');
    cache.setQueued('d', { weight: 4 }, 0, append.appended);
    expect(cache.peek('d')).toBeUndefined();
    append.commit();
    await settled();
    expect(cache.peek('d')).toBeUndefined();
    expect(cache.weightHeld).toBe(8);
  });

  /** `count` streams of weight 1 loaded in turn for `rounds` rounds, as commands load them; the hits of each round. */
  const inTurn = (cache: StateCache, count: number, rounds: number) => {
    const streams = Array.from({ length: count }, (_, i) => `s${i}`);
    const hitsPerRound: number[] = [];
    for (let round = 0; round < rounds; round++) {
      let hits = 0;
      for (const stream of streams) {
        cache.touch(stream);
        if (cache.peek(stream)) hits++;
        cache.set(stream, { weight: 1 }, round);
      }
      hitsPerRound.push(hits);
    }
    return hitsPerRound;
  };

  it('serves its share of streams used in turn that together outweigh the bound (least recently used alone served none)', async () => {
    const cache = new StateCache(100, undefined, { weigh, max: 10 });
    const hitsPerRound = inTurn(cache, 12, 5);
    expect(hitsPerRound).toEqual([0, 10, 10, 10, 10]);
  });

  it('lets newcomers in soon after a stream used a thousand times goes idle', async () => {
    const cache = new StateCache(100, undefined, { weigh, max: 10 });
    for (let use = 0; use < 1_000; use++) cache.touch('once-hot');
    cache.set('once-hot', { weight: 1 }, 0);
    // Now 12 other streams in turn, more than memory holds: the once-hot one is the least recently
    // used, and outranks each newcomer only until its count has been halved a few times.
    const hitsPerRound = inTurn(cache, 12, 30);
    expect(cache.peek('once-hot')).toBeUndefined();
    expect(hitsPerRound.slice(-5)).toEqual([10, 10, 10, 10, 10]);
  });

  it('keeps the one state heavier than the whole bound while lighter ones come and go after it, until a heavier one comes', async () => {
    const cache = new StateCache(100, undefined, { weigh, max: 10 });
    load(cache, 'hot', { weight: 50 });
    // Each command on the hot customer also reads a light stream (its business): the hot one stays.
    // (Each used more often than the ones before, so that each is let in.)
    for (let i = 0; i < 5; i++) {
      for (let use = 0; use < i; use++) cache.touch(`light-${i}`);
      load(cache, `light-${i}`, { weight: 4 });
      expect(cache.peek('hot')?.state, `after light-${i}`).toEqual({ weight: 50 });
    }
    // The others are held to the bound, least recently used first: 3 × 4 would be 12.
    expect(['light-2', 'light-3', 'light-4'].map((s) => cache.peek(s) !== undefined)).toEqual([false, true, true]);
    expect(cache.weightHeld).toBe(50 + 8);
    // Another state heavier than the bound replaces it: only one such state is ever held.
    load(cache, 'hotter', { weight: 60 });
    expect(cache.peek('hot')).toBeUndefined();
    expect(cache.weightHeld).toBe(60 + 8);
  });

  it('counts a state once as it grows, and forgets its weight with it', async () => {
    const cache = new StateCache(100, undefined, { weigh, max: 100 });
    cache.set('s', { weight: 1 }, 0);
    cache.set('s', { weight: 3 }, 1);
    const append = queued();
    cache.setQueued('s', { weight: 5 }, 2, append.appended);
    append.commit();
    await settled();
    expect(cache.weightHeld).toBe(5);
    const failing = queued();
    cache.setQueued('s', { weight: 7 }, 3, failing.appended);
    failing.fail(new Error('conflict'));
    await settled();
    expect(cache.peek('s')).toBeUndefined();
    expect(cache.weightHeld).toBe(0);
    cache.set('t', { weight: 2 }, 0);
    cache.forget('t');
    expect(cache.weightHeld).toBe(0);
  });
});

describe('state cache: snapshots', () => {
  /** A snapshot store whose writes the test answers by hand, each with the snapshot's size. */
  function heldSnapshots() {
    const puts: Array<{ stream: string; revision: number; answer: (chars: number) => void; fail: () => void }> = [];
    const store = {
      get: async () => undefined,
      put: (stream: string, revision: number) =>
        new Promise<number>((resolve, reject) => puts.push({ stream, revision, answer: resolve, fail: () => reject(new Error('not written')) })),
    };
    return { store, puts };
  }

  it('writes one snapshot of a stream at a time, and spaces the next by the size of the last', async () => {
    const { store, puts } = heldSnapshots();
    const cache = new StateCache(100, store);
    for (let revision = 0; revision <= 3 * SNAPSHOT_EVERY; revision++) cache.set('s', { revision }, revision);
    // The first is due at the stream's 200th event (revision 199); more fall due while it is being
    // written, and none is started meanwhile.
    const first = SNAPSHOT_EVERY - 1;
    expect(puts.map((p) => p.revision)).toEqual([first]);
    // A large state: 2,000 events (at 1,000 characters each) before the next.
    puts[0]!.answer(2_000_000);
    await settled();
    for (let revision = 3 * SNAPSHOT_EVERY + 1; revision < first + 2_000; revision++) cache.set('s', { revision }, revision);
    expect(puts).toHaveLength(1);
    cache.set('s', {}, first + 2_000);
    expect(puts.map((p) => p.revision)).toEqual([first, first + 2_000]);
    // Another stream is not held up by this one's.
    cache.set('t', {}, SNAPSHOT_EVERY);
    expect(puts.map((p) => p.stream)).toEqual(['s', 's', 't']);
  });

  it('after a snapshot that failed, takes the next one an interval later, not at once', async () => {
    const { store, puts } = heldSnapshots();
    const cache = new StateCache(100, store);
    cache.set('s', {}, SNAPSHOT_EVERY);
    puts[0]!.fail();
    await settled();
    cache.set('s', {}, SNAPSHOT_EVERY + 1);
    expect(puts).toHaveLength(1);
    cache.set('s', {}, 2 * SNAPSHOT_EVERY);
    expect(puts.map((p) => p.revision)).toEqual([SNAPSHOT_EVERY, 2 * SNAPSHOT_EVERY]);
  });

  it('snapshots a state leaving memory with many events folded since its last snapshot, not one with few, nor one queued', async () => {
    const { store, puts } = heldSnapshots();
    const weigh = (state: unknown) => (state as { weight: number }).weight;
    const cache = new StateCache(100, store, { weigh, max: 10 });
    const use = (stream: string, times: number) => {
      for (let i = 0; i < times; i++) cache.touch(stream);
    };
    use('many', 1);
    cache.set('many', { weight: 5 }, SNAPSHOT_ON_LEAVING - 1); // its events 0 … 15: 16 to fold again
    use('few', 1);
    cache.set('few', { weight: 5 }, SNAPSHOT_ON_LEAVING - 2);
    use('newcomer', 5);
    cache.set('newcomer', { weight: 5 }, 0); // used more: 'many' leaves
    expect(cache.peek('many')).toBeUndefined();
    use('other', 5);
    cache.set('other', { weight: 5 }, 0); // 'few' leaves
    expect(cache.peek('few')).toBeUndefined();
    expect(puts.map((p) => [p.stream, p.revision])).toEqual([['many', SNAPSHOT_ON_LEAVING - 1]]);
    // A heavy state waits for more events: a tenth of its weight.
    const heavy = new StateCache(100, store, { weigh, max: 400 });
    heavy.touch('heavy');
    heavy.set('heavy', { weight: 300 }, 20); // 21 events: more than 16, fewer than 30
    heavy.touch('next');
    heavy.touch('next');
    heavy.set('next', { weight: 300 }, 0);
    expect(heavy.peek('heavy')).toBeUndefined();
    expect(puts).toHaveLength(1);
    // A queued state is not known committed: never snapshotted.
    const append = queued();
    heavy.setQueued('next', { weight: 300 }, SNAPSHOT_EVERY - 2, append.appended);
    for (let i = 0; i < 3; i++) heavy.touch('last');
    heavy.set('last', { weight: 300 }, 0);
    expect(heavy.peek('next')).toBeUndefined();
    expect(puts).toHaveLength(1);
  });

  it('on shutdown snapshots the committed states worth it, most recently used first, and starts none after its time', async () => {
    const { store, puts } = heldSnapshots();
    const cache = new StateCache(100, store);
    cache.set('old', {}, 40);
    cache.set('few', {}, 3); // 4 events: not worth a snapshot
    cache.set('recent', {}, 30);
    const append = queued();
    cache.setQueued('queued', {}, 50, append.appended); // not known committed
    const held = cache.snapshotHeld(60_000, 1);
    await settled();
    expect(puts.map((p) => [p.stream, p.revision])).toEqual([['recent', 30]]);
    puts[0]!.answer(100);
    await settled();
    expect(puts.map((p) => [p.stream, p.revision])).toEqual([['recent', 30], ['old', 40]]);
    puts[1]!.fail();
    expect(await held).toBe(1);
    // Nothing is started once its time is up.
    const late = new StateCache(100, store);
    late.set('s', {}, 100);
    expect(await late.snapshotHeld(0)).toBe(0);
    expect(puts).toHaveLength(2);
  });
});


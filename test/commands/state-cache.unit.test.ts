import { describe, expect, it } from 'vitest';
import { StateCache } from '../../src/commands/state-cache.js';
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
});

describe('state cache: bounded by what its states weigh', () => {
  const weigh = (state: unknown) => (state as { weight: number }).weight;

  it('lets the least recently used states go once they weigh more than the bound together, keeping the newest', async () => {
    const cache = new StateCache(100, undefined, { weigh, max: 10 });
    cache.set('a', { weight: 4 }, 0);
    cache.set('b', { weight: 4 }, 0);
    cache.peek('a'); // used: 'b' is now the least recently used
    cache.set('c', { weight: 4 }, 0);
    expect(cache.peek('b')).toBeUndefined();
    expect(cache.peek('a')?.state).toEqual({ weight: 4 });
    expect(cache.weightHeld).toBe(8);
    // A state heavier than the bound alone stays: it is the one in use.
    cache.set('huge', { weight: 50 }, 0);
    expect(cache.peek('huge')?.state).toEqual({ weight: 50 });
    expect(cache.weightHeld).toBe(50);
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

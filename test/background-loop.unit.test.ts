import { describe, expect, it } from 'vitest';
import { BackgroundLoop, STALLED_AFTER_MS } from '../src/background-loop.js';

describe('a background loop’s health', () => {
  it('is stopped until started, failing while rounds throw, running once one succeeds, stopped after stop', async () => {
    let fail = true;
    const loop = new BackgroundLoop(async () => {
      if (fail) throw new Error('database is down');
      return false;
    }, { pollMs: 10, onError: () => {} });
    expect(loop.health().state).toBe('stopped');
    loop.start();
    await expect.poll(() => loop.health().state).toBe('failing');
    expect(loop.health()).toMatchObject({ last_error: 'database is down', failing_since: expect.any(String) });
    fail = false;
    loop.wake();
    await expect.poll(() => loop.health().state, { timeout: 5_000 }).toBe('running');
    expect(loop.health()).toMatchObject({ last_error: null, failing_since: null });
    await loop.stop();
    expect(loop.health().state).toBe('stopped');
  });

  it('is stalled when one round has run longer than STALLED_AFTER_MS by its clock', async () => {
    let now = 1_000_000;
    let finish: () => void = () => {};
    const loop = new BackgroundLoop(() => new Promise<boolean>((resolve) => (finish = () => resolve(false))), { pollMs: 10, onError: () => {}, now: () => now });
    loop.start();
    now += STALLED_AFTER_MS;
    expect(loop.health().state).toBe('running');
    now += 1;
    expect(loop.health().state).toBe('stalled');
    finish();
    await expect.poll(() => loop.health().state).toBe('running');
    expect(loop.health().last_round_at).toBe(new Date(now).toISOString());
    const stopped = loop.stop();
    finish();
    await stopped;
  });
});

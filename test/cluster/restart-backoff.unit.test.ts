import { describe, expect, it } from 'vitest';
import { RestartBackoff } from '../../src/cluster/restart-backoff.js';

describe('the pause before restarting a crashed child', () => {
  it('doubles while the child keeps dying young, up to 8 s', () => {
    const backoff = new RestartBackoff();
    let now = 0;
    const pauses: number[] = [];
    for (let i = 0; i < 8; i++) {
      backoff.started(now);
      now += 1_000;
      const pause = backoff.crashed(now);
      pauses.push(pause);
      now += pause;
    }
    expect(pauses).toEqual([250, 500, 1_000, 2_000, 4_000, 8_000, 8_000, 8_000]);
  });

  it('is short again for a child that ran 30 s before it crashed', () => {
    const backoff = new RestartBackoff();
    backoff.started(0);
    backoff.crashed(100);
    backoff.started(350);
    expect(backoff.crashed(400)).toBe(500);
    backoff.started(900);
    expect(backoff.crashed(900 + 30_000)).toBe(250);
  });
});

import { describe, expect, it } from 'vitest';
import { PlanRefresh } from '../../src/db/prepared-statements.js';

describe('PlanRefresh', () => {
  it('drops each connection’s plans once at 10, 20, 40, 80, 160 and 320 s into the process, then every 320 s', () => {
    let now = 0;
    const refresh = new PlanRefresh(() => now);
    const a = {};
    const dueAt = (seconds: number[]) =>
      seconds.filter((s) => {
        now = s * 1000;
        return refresh.due(a);
      });
    expect(refresh.due(a)).toBe(false); // a connection seen for the first time has fresh plans
    expect(dueAt([5, 9, 10, 11, 19, 20, 39, 40, 79, 80, 159, 160, 319, 320, 321, 639, 640, 960, 961])).toEqual([10, 20, 40, 80, 160, 320, 640, 960]);
  });

  it('counts each connection on its own, and one first seen late only from then on', () => {
    let now = 0;
    const refresh = new PlanRefresh(() => now);
    const early = {};
    refresh.due(early);
    now = 30_000;
    const late = {};
    expect([refresh.due(early), refresh.due(late)]).toEqual([true, false]);
    now = 40_000;
    expect([refresh.due(early), refresh.due(late), refresh.due(early)]).toEqual([true, true, false]);
  });
});

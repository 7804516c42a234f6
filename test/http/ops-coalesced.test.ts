import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/test-app.js';

// `/readyz` and `/metrics` need no key and each read the database: a flood of them must not
// cost a computation per request. Requests that overlap share one; a later one computes afresh.
let t: TestApp;
let lagReads = 0;

beforeAll(async () => {
  t = await startTestApp();
  const projections = t.services.projections;
  const lag = projections.lag.bind(projections);
  projections.lag = (...args: Parameters<typeof lag>) => {
    lagReads++;
    return lag(...args);
  };
});
afterAll(() => t?.close());

describe.each(['/readyz', '/metrics'])('%s under a flood', (path) => {
  it('answers every overlapping request from one read of the projections, and the next request from a read of its own', async () => {
    lagReads = 0;
    const flood = await Promise.all(Array.from({ length: 12 }, () => t.request('GET', path)));
    expect(flood.map((r) => r.status)).toEqual(Array(12).fill(200));
    expect(new Set(flood.map((r) => r.text.replace(/^loyalty_process_.*$|^loyalty_nodejs_.*$/gm, ''))).size).toBe(1);
    expect(lagReads).toBe(1);

    expect((await t.request('GET', path)).status).toBe(200);
    expect(lagReads).toBe(2);
  });
});

it('a readiness read that fails is not kept: the requests that shared it answer 503, the next one reads again', async () => {
  const projections = t.services.projections;
  const lag = projections.lag;
  projections.lag = async () => {
    throw new Error('database gone');
  };
  try {
    const failed = await Promise.all([t.request('GET', '/readyz'), t.request('GET', '/readyz')]);
    expect(failed.map((r) => [r.status, r.body.status])).toEqual([
      [503, 'unavailable'],
      [503, 'unavailable'],
    ]);
  } finally {
    projections.lag = lag;
  }
  expect((await t.request('GET', '/readyz')).status).toBe(200);
});

import { describe, expect, it } from 'vitest';
import { FrequencySketch } from '../../src/commands/frequency-sketch.js';

describe('frequency sketch', () => {
  it('counts each key at least as often as it was used, and about that often among many', () => {
    const sketch = new FrequencySketch(1_000, 1_000_000);
    for (let i = 0; i < 1_000; i++) for (let use = 0; use < i % 5; use++) sketch.add(`cus_${i}`);
    let exact = 0;
    for (let i = 0; i < 1_000; i++) {
      const count = sketch.count(`cus_${i}`);
      expect(count).toBeGreaterThanOrEqual(i % 5);
      if (count === i % 5) exact++;
    }
    expect(exact).toBeGreaterThan(950);
    expect(sketch.count('never used')).toBe(0);
  });

  it('halves every count once per period of uses, so old popularity fades', () => {
    const sketch = new FrequencySketch(16, 100);
    for (let use = 0; use < 60; use++) sketch.add('old');
    expect(sketch.count('old')).toBe(60);
    for (let use = 0; use < 40; use++) sketch.add('new'); // the 100th use halves
    expect([sketch.count('old'), sketch.count('new')]).toEqual([30, 20]);
  });

  it('stops counting at 255 instead of wrapping', () => {
    const sketch = new FrequencySketch(16, 10_000);
    for (let use = 0; use < 300; use++) sketch.add('hot');
    expect(sketch.count('hot')).toBe(255);
  });
});

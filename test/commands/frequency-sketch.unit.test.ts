import { describe, expect, it } from 'vitest';
import { FrequencySketch } from '../../src/commands/frequency-sketch.js';

describe('frequency sketch', () => {
  it('counts each key at least as often as it was used, and about that often among many', () => {
    const sketch = new FrequencySketch(1_000);
    for (let i = 0; i < 1_000; i++) for (let use = 0; use < i % 5; use++) sketch.add(`cus_${i}`, 1_000_000);
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
    const sketch = new FrequencySketch(16);
    for (let use = 0; use < 12; use++) sketch.add('old', 20);
    expect(sketch.count('old')).toBe(12);
    for (let use = 0; use < 8; use++) sketch.add('new', 20); // the 20th use halves
    expect([sketch.count('old'), sketch.count('new')]).toEqual([6, 4]);
  });

  it('stops counting at 15, so a key used a thousand times falls to nothing after four halvings', () => {
    const sketch = new FrequencySketch(16);
    for (let use = 0; use < 1_000; use++) sketch.add('hot', 10_000);
    expect(sketch.count('hot')).toBe(15);
    const counts = [];
    for (let halving = 0; halving < 4; halving++) {
      for (let use = 0; use < 100; use++) sketch.add(`other-${use}`, 100); // a period of 100 uses, as the caller asks
      counts.push(sketch.count('hot'));
    }
    expect(counts).toEqual([7, 3, 1, 0]);
  });
});

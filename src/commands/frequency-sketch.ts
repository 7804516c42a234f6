import { fnv1a } from '../string-hash.js';

const ROWS = 4;
/**
 * Counts stop here (four bits' worth, as Caffeine's): a stream used a thousand times and then no
 * more outranks a newcomer only until a few halvings bring it down, not for hundreds of them.
 */
const MAX_COUNT = 15;

/**
 * How often each stream was used lately, approximately, in fixed memory: a count-min sketch (four
 * rows of byte counters; a stream's count is the least of its four, never below the truth, at most
 * 15). Every `period` uses (the caller's measure of "lately"), all counts are halved, so old popularity fades. The state cache asks it whom to
 * keep (TinyLFU admission: Einziger, Friedman and Manes, "TinyLFU: A Highly Efficient Cache
 * Admission Policy", 2017).
 */
export class FrequencySketch {
  private readonly counters: Uint8Array;
  private readonly mask: number;
  private uses = 0;

  /** `size`: about how many streams it tells apart well (the cache's capacity); rows of twice as many counters. */
  constructor(size: number) {
    let width = 16;
    while (width < 2 * size) width *= 2;
    this.counters = new Uint8Array(ROWS * width);
    this.mask = width - 1;
  }

  /** One use of `key`; all counts are halved once `period` uses have been counted since the last halving. */
  add(key: string, period: number): void {
    const hash = fnv1a(key);
    for (let row = 0; row < ROWS; row++) {
      const i = this.index(hash, row);
      if (this.counters[i]! < MAX_COUNT) this.counters[i]!++;
    }
    if (++this.uses >= period) this.age();
  }

  /** About how many times `key` was used lately (never fewer than it was since the last halving). */
  count(key: string): number {
    const hash = fnv1a(key);
    let least = MAX_COUNT;
    for (let row = 0; row < ROWS; row++) least = Math.min(least, this.counters[this.index(hash, row)]!);
    return least;
  }

  private age(): void {
    for (let i = 0; i < this.counters.length; i++) this.counters[i]! >>= 1;
    this.uses = 0;
  }

  /** The counter of `hash` in `row`: each row mixes the hash with its own odd constant. */
  private index(hash: number, row: number): number {
    const mixed = Math.imul(hash ^ (hash >>> 16), ROW_SEEDS[row]!);
    return row * (this.mask + 1) + ((mixed ^ (mixed >>> 15)) & this.mask);
  }
}

const ROW_SEEDS = [0x9e3779b1, 0x85ebca6b, 0xc2b2ae35, 0x27d4eb2f];

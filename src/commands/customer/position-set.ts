import { List } from 'immutable';

/** Bits per word: a word stays a small integer (a Smi) on every V8 build, so a word costs one slot of its List. */
const WORD = 30;

/**
 * A persistent set of positions (0, 1, 2, …) as a bitmap: a List of 30-bit words, so a position
 * costs about a bit and adding or removing one copies only the List's path to its word
 * (O(log₃₂ n)). What LotLedger keeps of which lots are open or timed: a set of ids cost about
 * 240 bytes per member (an immutable.js OrderedSet), which a customer's state held for every lot.
 */
export class PositionSet {
  private constructor(
    private readonly words: List<number>,
    /** Members. */
    readonly size: number,
  ) {}

  static readonly EMPTY = new PositionSet(List(), 0);

  has(position: number): boolean {
    return ((this.words.get(Math.floor(position / WORD)) ?? 0) & (1 << position % WORD)) !== 0;
  }

  /** The set with `position` in it (`member`) or not. */
  with(position: number, member: boolean): PositionSet {
    if (this.has(position) === member) return this;
    const index = Math.floor(position / WORD);
    const word = (this.words.get(index) ?? 0) ^ (1 << position % WORD);
    return new PositionSet(this.words.set(index, word), this.size + (member ? 1 : -1));
  }

  /** The members, in increasing order. */
  positions(): number[] {
    const out: number[] = [];
    let base = 0;
    for (const word of this.words) {
      for (let bits = word ?? 0, bit = 0; bits !== 0; bits >>>= 1, bit++) if (bits & 1) out.push(base + bit);
      base += WORD;
    }
    return out;
  }

  /** For a batch of changes: `with` then changes this set's words in place (see immutable.js `asMutable`). */
  asMutable(): PositionSet {
    return new PositionSet(this.words.asMutable(), this.size);
  }

  asImmutable(): PositionSet {
    return new PositionSet(this.words.asImmutable(), this.size);
  }
}

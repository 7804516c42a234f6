import { type Checkpoint, compareCheckpoints } from '../store/event-store.js';
import { MinHeap } from '../min-heap.js';

interface Waiter {
  position: Checkpoint;
  /** Answered: by a checkpoint that passed its position, or by its timeout. */
  answered: boolean;
  resolve: (reached: boolean) => void;
  timer?: ReturnType<typeof setTimeout>;
}

/** Timed-out waiters are dropped at once when there are at least this many, and more of them than of live ones. */
const DROP_TIMED_OUT_FROM = 64;

/**
 * Who waits for a projection to pass a position (read-your-writes), lowest position first: a
 * checkpoint answers the k waiters it passes in O(k log n). Each answered one used to be taken out
 * of a list by filtering it, so one checkpoint passing n waiters cost O(n²): about 20 ms of the event
 * loop for 1,000 waiting writes (docs/performance.md). A waiter that times out is answered `false`
 * and left in the heap, marked, until a checkpoint passes it, or until such waiters outnumber the
 * live ones (when nothing passes, as while the projections are stuck).
 */
export class PositionWaiters {
  private readonly heap = new MinHeap<Waiter>((a, b) => compareCheckpoints(a.position, b.position));
  private timedOut = 0;

  /** Waiters not answered yet. */
  get size(): number {
    return this.heap.size - this.timedOut;
  }

  /** Resolves true once `passed` is called with a checkpoint at or past `position`, false after `timeoutMs`. */
  wait(position: Checkpoint, timeoutMs: number): Promise<boolean> {
    return new Promise((resolve) => {
      const waiter: Waiter = { position, answered: false, resolve };
      waiter.timer = setTimeout(() => {
        waiter.answered = true;
        this.timedOut++;
        resolve(false);
        if (this.timedOut >= DROP_TIMED_OUT_FROM && this.timedOut * 2 > this.heap.size) {
          this.heap.retain((w) => !w.answered);
          this.timedOut = 0;
        }
      }, timeoutMs);
      this.heap.push(waiter);
    });
  }

  /** Answers true every waiter whose position `checkpoint` has reached. */
  passed(checkpoint: Checkpoint): void {
    for (let next = this.heap.peek(); next && compareCheckpoints(checkpoint, next.position) >= 0; next = this.heap.peek()) {
      this.heap.pop();
      if (next.answered) {
        this.timedOut--;
        continue;
      }
      next.answered = true;
      clearTimeout(next.timer);
      next.resolve(true);
    }
  }
}

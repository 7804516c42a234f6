export interface BatchedOptions {
  /** Most calls one statement carries. */
  maxBatch: number;
  /** Most statements in flight at once (each on a connection of its own). */
  maxInFlight: number;
}

export const DEFAULT_BATCHED: BatchedOptions = { maxBatch: 64, maxInFlight: 4 };

interface Waiting<In, Out> {
  input: In;
  resolve: (output: Out) => void;
  reject: (error: unknown) => void;
}

/** PostgreSQL's class 22, data exception: a value one read brought that the others did not. */
const isDataException = (error: unknown) => typeof (error as { code?: unknown })?.code === 'string' && (error as { code: string }).code.startsWith('22');

/**
 * Calls of one kind that arrive together, sent to the database as one statement: a group commit
 * for short statements (a customer's row, a summary, a take from a rate-limit bucket). On these
 * machines a round trip costs far more than the row it brings (docs/performance.md: the `writev`
 * of the query and the wake-up of the backend), and under load many requests wait for the same
 * kind of row at once. Calls queue in arrival order; they leave at the end of the event loop's
 * turn (so the requests read from the sockets in one turn travel together), at most
 * `maxInFlight` statements at once, and while those are out the queue grows into the next batch.
 * Alone, a call leaves at the end of the same turn (an immediate, never a timer), and costs what an
 * unbatched statement costs.
 *
 * Each call still sees everything committed before it was made: its statement starts after it
 * joined the queue. `run` answers one output per input, in order. If a statement of several
 * calls fails on a data exception (one call's value), each call is retried alone, so one bad
 * value fails only its own call; any other failure (the server not answering) fails the batch.
 */
export function batched<In, Out>(run: (inputs: In[]) => Promise<Out[]>, options: BatchedOptions = DEFAULT_BATCHED): (input: In) => Promise<Out> {
  const queue: Array<Waiting<In, Out>> = [];
  let inFlight = 0;
  let scheduled = false;

  const send = (batch: Array<Waiting<In, Out>>): Promise<void> =>
    run(batch.map((w) => w.input)).then(
      (outputs) => batch.forEach((w, i) => w.resolve(outputs[i]!)),
      async (error: unknown) => {
        if (batch.length > 1 && isDataException(error)) await Promise.all(batch.map((w) => send([w])));
        else batch.forEach((w) => w.reject(error));
      },
    );

  const flush = () => {
    scheduled = false;
    while (inFlight < options.maxInFlight && queue.length > 0) {
      const batch = queue.splice(0, options.maxBatch);
      inFlight++;
      void send(batch).finally(() => {
        inFlight--;
        schedule();
      });
    }
  };

  const schedule = () => {
    if (scheduled || queue.length === 0 || inFlight >= options.maxInFlight) return;
    scheduled = true;
    setImmediate(flush);
  };

  return (input) =>
    new Promise<Out>((resolve, reject) => {
      queue.push({ input, resolve, reject });
      schedule();
    });
}

import { describe, expect, it } from 'vitest';
import { batched } from '../../src/db/batched.js';

/** A `run` that records each batch it is given and answers when `release` is called. */
function recordingRun(answer: (input: number) => number = (n) => n * 10) {
  const batches: number[][] = [];
  const open: Array<() => void> = [];
  const run = (inputs: number[]) => {
    batches.push(inputs);
    return new Promise<number[]>((resolve) => open.push(() => resolve(inputs.map(answer))));
  };
  const releaseAll = () => open.splice(0).forEach((release) => release());
  return { run, batches, releaseAll, inFlight: () => open.length };
}

const turn = () => new Promise((resolve) => setImmediate(resolve));

describe('batched', () => {
  it('sends the reads asked in one turn of the event loop as one batch, answering each its own', async () => {
    const { run, batches, releaseAll } = recordingRun();
    const read = batched(run, { maxBatch: 64, maxInFlight: 4 });
    const answers = Promise.all([1, 2, 3].map(read));
    await turn();
    releaseAll();
    expect(await answers).toEqual([10, 20, 30]);
    expect(batches).toEqual([[1, 2, 3]]);
  });

  it('sends a read asked alone at the end of the same turn, waiting for no company', async () => {
    const { run, batches } = recordingRun();
    const read = batched(run, { maxBatch: 64, maxInFlight: 4 });
    void read(7);
    expect(batches).toEqual([]);
    // An immediate queued after the read's own runs after it, in the same check phase: no timer, no later turn.
    await turn();
    expect(batches).toEqual([[7]]);
  });

  it('holds at most maxInFlight batches out; reads asked meanwhile go together when one comes back', async () => {
    const { run, batches, releaseAll, inFlight } = recordingRun();
    const read = batched(run, { maxBatch: 64, maxInFlight: 2 });
    const first = [read(1)];
    await turn();
    const second = [read(2)];
    await turn();
    const waiting = [3, 4, 5, 6].map(read);
    await turn();
    expect(inFlight()).toBe(2);
    expect(batches).toEqual([[1], [2]]);
    releaseAll();
    expect(await Promise.all([...first, ...second])).toEqual([10, 20]);
    await turn();
    expect(batches).toEqual([[1], [2], [3, 4, 5, 6]]);
    releaseAll();
    expect(await Promise.all(waiting)).toEqual([30, 40, 50, 60]);
  });

  it('splits what waits into batches of maxBatch', async () => {
    const { run, batches, releaseAll } = recordingRun();
    const read = batched(run, { maxBatch: 2, maxInFlight: 4 });
    const answers = Promise.all([1, 2, 3, 4, 5].map(read));
    await turn();
    releaseAll();
    expect(await answers).toEqual([10, 20, 30, 40, 50]);
    expect(batches).toEqual([[1, 2], [3, 4], [5]]);
  });

  it('retries each read alone when a batch fails on a data exception, so only the bad value fails', async () => {
    const batches: number[][] = [];
    const read = batched(
      async (inputs: number[]) => {
        batches.push(inputs);
        if (inputs.includes(13)) throw Object.assign(new Error('invalid byte sequence'), { code: '22021' });
        return inputs.map((n) => n * 10);
      },
      { maxBatch: 64, maxInFlight: 4 },
    );
    const answers = await Promise.allSettled([12, 13, 14].map(read));
    expect(answers.map((a) => (a.status === 'fulfilled' ? a.value : (a.reason as Error).message))).toEqual([120, 'invalid byte sequence', 140]);
    expect(batches).toEqual([[12, 13, 14], [12], [13], [14]]);
  });

  it('fails every read of the batch on any other failure, and goes on serving later reads', async () => {
    let down = true;
    const read = batched(
      async (inputs: number[]) => {
        if (down) throw new Error('the database is not answering');
        return inputs;
      },
      { maxBatch: 64, maxInFlight: 1 },
    );
    const failed = await Promise.allSettled([1, 2].map(read));
    expect(failed.map((a) => a.status)).toEqual(['rejected', 'rejected']);
    down = false;
    expect(await Promise.all([3, 4].map(read))).toEqual([3, 4]);
  });
});

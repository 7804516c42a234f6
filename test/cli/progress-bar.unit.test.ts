import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { REBUILD_STAGES, rebuildProgressBar } from '../../src/cli/progress-bar.js';

/** A terminal stand-in: cli-progress draws only on a TTY. */
function fakeTerminal() {
  let written = '';
  const stream = Object.assign(
    new Writable({
      write(chunk, _encoding, done) {
        written += String(chunk);
        done();
      },
    }),
    { isTTY: true, columns: 200 },
  );
  // Each frame starts by moving the cursor to column 1; escape sequences removed.
  const frames = () =>
    written
      .split('\x1b[1G')
      .slice(1)
      .map((frame) => frame.replace(/\x1b\[[0-9;?]*[A-Za-z]|\x1b[78]/g, '').trim());
  return { stream, frames };
}

const tick = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('the projections rebuild progress bar', () => {
  it('shows ETA -- until a rate is known, and never NaN or Infinity as an ETA', async () => {
    const terminal = fakeTerminal();
    const bar = rebuildProgressBar(terminal.stream, { fps: 100 });
    // As `projections rebuild` drives it: started at 0 of 1, then the log's size, then progress.
    bar.start(1, 0, { projector: 'customers', rate: 0, stage: REBUILD_STAGES.replay });
    bar.setTotal(500);
    bar.update(0, { rate: 0 });
    await tick(60);
    bar.update(0, { rate: 0 }); // no progress yet: a rate of 0 gives cli-progress an infinite ETA
    await tick(60);
    bar.update(100, { rate: 800 });
    await tick(60);
    bar.update(500, { rate: 2000 });
    bar.stop();

    const frames = terminal.frames();
    expect(frames.length).toBeGreaterThanOrEqual(2);
    expect(frames[0]).toMatch(/^customers \[.*\] 0% \| 0\/1 events \| 0 events\/s \| ETA --$/);
    for (const frame of frames) {
      expect(frame).toMatch(/ETA (--|\d+s|\d+m\d+s|\d+h\d+m)$/);
      expect(frame).not.toMatch(/NaN|Infinity|INF|NULL|NFs|LLs/);
    }
    expect(frames.at(-1)).toMatch(/100% \| 500\/500 events .* ETA\s+0s$/);
  });

  it('says what it does once the replay is done: the copies\' indexes, then the swap', async () => {
    const terminal = fakeTerminal();
    const bar = rebuildProgressBar(terminal.stream, { fps: 100 });
    bar.start(500, 0, { projector: 'customers', rate: 0, stage: REBUILD_STAGES.replay });
    bar.update(500, { rate: 2000 });
    await tick(60);
    bar.update(500, { stage: REBUILD_STAGES.indexes });
    await tick(60);
    bar.update(500, { stage: REBUILD_STAGES.swap });
    bar.stop();
    const frames = terminal.frames();
    expect(frames.some((f) => /ETA\s+0s \| building the copies' indexes$/.test(f))).toBe(true);
    expect(frames.at(-1)).toMatch(/ETA\s+0s \| swapping the copies in$/);
    expect(frames.some((f) => /undefined|\{stage\}/.test(f))).toBe(false);
  });
});

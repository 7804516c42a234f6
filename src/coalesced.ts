/**
 * `compute`, shared by the calls that overlap it: a call made while one is under way gets that
 * one's result (or failure), computed with the arguments of the call that started it; a call made
 * after it has settled computes afresh, so no answer is older than its call. For what anyone may
 * ask for and costs more than a request should (`/metrics`, `/readyz`): a flood of such requests
 * costs one computation at a time.
 */
export function coalesced<A extends unknown[], T>(compute: (...args: A) => Promise<T>): (...args: A) => Promise<T> {
  let running: Promise<T> | undefined;
  return (...args) => {
    running ??= compute(...args).finally(() => {
      running = undefined;
    });
    return running;
  };
}

import { type Dispatcher, request } from 'undici';

/** The code a failed request ended with (`ECONNREFUSED`, `ECONNRESET`, …). */
export function failureCode(error: unknown): string {
  const e = error as { code?: string; cause?: { code?: string } };
  return e.cause?.code ?? e.code ?? String(error);
}

/**
 * Loops of earns over keep-alive connections, for a drain under load: loop i earns 1 point after
 * another on `loops[i].customerId` through `loops[i].agent`, each with a reference of its own, until
 * a request fails (the server stopped listening). `statuses[i]` holds loop i's answers, `failures`
 * the code each loop ended on, `sent()` how many answers came so far, and `done` resolves when
 * every loop has ended.
 */
export function earnLoops(baseUrl: string, key: string, loops: Array<{ customerId: string; agent: Dispatcher }>) {
  const statuses: number[][] = loops.map(() => []);
  const failures: string[] = [];
  let sent = 0;
  const loop = async ({ customerId, agent }: { customerId: string; agent: Dispatcher }, loopId: number) => {
    for (let i = 0; ; i++) {
      try {
        const response = await request(`${baseUrl}/api/v1/customers/${customerId}/points/transaction`, {
          method: 'POST',
          dispatcher: agent,
          headers: { 'content-type': 'application/json', 'x-api-key': key },
          body: JSON.stringify({ type: 'earn', amount: 1, reference: `loop-${loopId}-${i}` }),
        });
        await response.body.text();
        statuses[loopId]!.push(response.statusCode);
        sent++;
      } catch (error) {
        failures.push(failureCode(error));
        return;
      }
    }
  };
  const done = Promise.all(loops.map(loop)).then(() => undefined);
  return { statuses, failures, sent: () => sent, done };
}

/** Resolves once `count()` reaches `n`. */
export async function until(count: () => number, n: number): Promise<void> {
  while (count() < n) await new Promise((r) => setTimeout(r, 20));
}

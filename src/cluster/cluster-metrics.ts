import type { Worker } from 'node:cluster';
import { AggregatorRegistry } from 'prom-client';
import type { MetricsJson, ToChild, ToPrimary } from './cluster-messages.js';

/** How long the primary waits for one child's metrics before `/metrics` fails rather than under-counts. */
const CHILD_TIMEOUT_MS = 5_000;

type Answer = Extract<ToPrimary, { type: 'loyalty:metrics' }>;

/**
 * The primary's side of `/metrics`: an HTTP child asks for the instance's metrics, the primary
 * collects every running child's registry over the channel and sums them with prom-client's
 * `AggregatorRegistry.aggregate` (how each metric adds up is set where it is defined, see
 * `createMetrics`). A child that exits while asked counts as having nothing left to add; one that
 * does not answer in time fails the scrape, which Prometheus records as such, rather than making
 * the instance's counters drop.
 *
 * @example
 * const collector = new MetricsCollector();
 * worker.on('message', (m) => m.type === 'loyalty:metrics' && collector.answered(m));
 * const text = await collector.instanceText(runningWorkers);
 */
export class MetricsCollector {
  private nextId = 0;
  private readonly pending = new Map<number, { worker: Worker; resolve: (metrics: MetricsJson) => void; reject: (error: Error) => void }>();

  async instanceText(workers: Worker[]): Promise<string> {
    const registries = await Promise.all(workers.map((worker) => this.collect(worker)));
    return AggregatorRegistry.aggregate(registries).metrics();
  }

  answered(message: Answer): void {
    const request = this.pending.get(message.id);
    if (!request) return;
    this.pending.delete(message.id);
    if (message.metrics) request.resolve(message.metrics);
    else request.reject(new Error(`pid ${request.worker.process.pid}: ${message.error}`));
  }

  forget(worker: Worker): void {
    for (const [id, request] of this.pending) {
      if (request.worker !== worker) continue;
      this.pending.delete(id);
      request.resolve([]);
    }
  }

  private collect(worker: Worker): Promise<MetricsJson> {
    return new Promise((resolve, reject) => {
      const id = this.nextId++;
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new Error(`pid ${worker.process.pid} did not send its metrics within ${CHILD_TIMEOUT_MS} ms`));
      }, CHILD_TIMEOUT_MS);
      const settle = <T>(then: (value: T) => void) => (value: T) => {
        clearTimeout(timer);
        then(value);
      };
      this.pending.set(id, { worker, resolve: settle(resolve), reject: settle(reject) });
      const request: ToChild = { type: 'loyalty:collect-metrics', id };
      worker.send(request, () => {});
    });
  }
}

import { performance } from 'node:perf_hooks';
import autocannon from 'autocannon';

const EARN_BODY = JSON.stringify({ type: 'earn', amount: 1 });

/** A client for the service's real API, authenticated with one key. */
export class Api {
  constructor(
    readonly baseUrl: string,
    readonly key: string,
  ) {}

  async request<T = any>(method: string, path: string, body?: unknown): Promise<{ status: number; body: T }> {
    const response = await fetch(`${this.baseUrl}${path}`, {
      method,
      headers: { 'x-api-key': this.key, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    return { status: response.status, body: (text ? JSON.parse(text) : undefined) as T };
  }

  async expect<T = any>(status: number, method: string, path: string, body?: unknown): Promise<T> {
    const response = await this.request<T>(method, path, body);
    if (response.status !== status) {
      throw new Error(`${method} ${path}: expected ${status}, got ${response.status} ${JSON.stringify(response.body)}`);
    }
    return response.body;
  }

  /** Creates `count` customers through POST /customers, `concurrency` at a time; returns their ids. */
  async createCustomers(count: number, tag: string, concurrency = 16): Promise<string[]> {
    const ids: string[] = new Array(count);
    let next = 0;
    const worker = async () => {
      for (let i = next++; i < count; i = next++) {
        const created = await this.expect<{ id: string }>(201, 'POST', '/api/v1/customers', {
          email: `${tag}-${i}@bench.example`,
          first_name: `Bench ${i}`,
        });
        ids[i] = created.id;
      }
    };
    await Promise.all(Array.from({ length: Math.min(concurrency, count) }, worker));
    return ids;
  }

  async balance(customerId: string): Promise<number> {
    const summary = await this.expect<{ points: { balance: number } }>(200, 'GET', `/api/v1/customers/${customerId}/summary`);
    return summary.points.balance;
  }

  /** Earns 1 point on `customerId`, one request after another, for `seconds`; returns each latency in ms. */
  async sequentialEarns(customerId: string, seconds: number, maxRequests = 2000): Promise<number[]> {
    const latencies: number[] = [];
    const end = performance.now() + seconds * 1000;
    while (performance.now() < end && latencies.length < maxRequests) {
      const start = performance.now();
      const response = await fetch(`${this.baseUrl}/api/v1/customers/${customerId}/points/transaction`, {
        method: 'POST',
        headers: { 'x-api-key': this.key, 'content-type': 'application/json' },
        body: EARN_BODY,
      });
      await response.arrayBuffer();
      if (response.status !== 201) throw new Error(`earn on ${customerId}: status ${response.status}`);
      latencies.push(performance.now() - start);
    }
    return latencies;
  }
}

export interface LoadResult {
  /** 2xx responses per second over the run. */
  okPerSecond: number;
  ok: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  p50: number;
  p99: number;
  seconds: number;
  statusCodes: Record<string, number>;
}

interface LoadOptions {
  baseUrl: string;
  key: string;
  connections: number;
  seconds: number;
  /** Requests per second over all connections (open loop); absent: as fast as answers come back. */
  overallRate?: number;
}

function summarize(result: autocannon.Result): LoadResult {
  const statusCodes: Record<string, number> = {};
  for (const [code, stat] of Object.entries(result.statusCodeStats ?? {})) statusCodes[code] = stat.count ?? 0;
  return {
    okPerSecond: result['2xx'] / result.duration,
    ok: result['2xx'],
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    p50: result.latency.p50,
    p99: result.latency.p99,
    seconds: result.duration,
    statusCodes,
  };
}

/** POST earn 1 point; each request goes to the next customer of `customers`, round robin. */
export async function earnLoad(options: LoadOptions & { customers: string[] }): Promise<LoadResult> {
  const paths = options.customers.map((id) => `/api/v1/customers/${id}/points/transaction`);
  let next = 0;
  const result = await autocannon({
    url: options.baseUrl,
    connections: options.connections,
    duration: options.seconds,
    ...(options.overallRate ? { overallRate: Math.max(1, Math.round(options.overallRate)) } : {}),
    headers: { 'x-api-key': options.key, 'content-type': 'application/json' },
    requests: [
      {
        method: 'POST',
        body: EARN_BODY,
        setupRequest: (request) => ({ ...request, path: paths[next++ % paths.length]! }),
      },
    ],
  });
  return summarize(result);
}

/** GETs of `path(customer)`, round robin over `customers`. */
export async function readLoad(options: LoadOptions & { customers: string[]; path: (customerId: string) => string }): Promise<LoadResult> {
  const paths = options.customers.map(options.path);
  let next = 0;
  const result = await autocannon({
    url: options.baseUrl,
    connections: options.connections,
    duration: options.seconds,
    headers: { 'x-api-key': options.key },
    requests: [{ method: 'GET', setupRequest: (request) => ({ ...request, path: paths[next++ % paths.length]! }) }],
  });
  return summarize(result);
}

export function percentile(values: number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

import { session } from './session.js';

/** An answer of the API that is not a success: its status and the contract's error body. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: Array<{ path: string; message: string }> = [],
  ) {
    super(message);
  }

  /** The message of a detail about `field` (`amount`, `properties.x`), if the API named it. */
  about(field: string): string | undefined {
    return this.details.find((d) => d.path === field || d.path.startsWith(`${field}.`))?.message;
  }
}

/** The request never got an answer (offline, server down): the same submission may be retried safely. */
export class NetworkError extends Error {}

export interface Page<T> {
  items: T[];
  /** The `starting_after` of the next page, when the `Link` header names one. */
  next: string | null;
}

async function send(method: string, path: string, options: { body?: unknown; idempotencyKey?: string; key?: string } = {}): Promise<Response> {
  const headers: Record<string, string> = {};
  const key = options.key ?? session.key();
  if (key) headers['X-API-Key'] = key;
  if (options.body !== undefined) headers['Content-Type'] = 'application/json';
  if (options.idempotencyKey) headers['Idempotency-Key'] = options.idempotencyKey;
  let response: Response;
  try {
    response = await fetch(`/api/v1${path}`, {
      method,
      headers,
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
      cache: 'no-store',
    });
  } catch {
    throw new NetworkError('The server could not be reached. Check the connection and try again: nothing is written twice.');
  }
  if (!response.ok) {
    const body = await response.json().catch(() => null);
    throw new ApiError(response.status, body?.code ?? 'unknown', body?.message ?? `The server answered ${response.status}.`, body?.details ?? []);
  }
  return response;
}

/** The public API, called with the signed-in key (see docs at /docs). */
export const api = {
  async get<T>(path: string, key?: string): Promise<T> {
    return (await send('GET', path, { key })).json() as Promise<T>;
  },

  /** One page of a list, with the cursor of the next one from its `Link` header. */
  async page<T>(path: string): Promise<Page<T>> {
    const response = await send('GET', path);
    const link = response.headers.get('link') ?? '';
    const next = /<[^>]*[?&]starting_after=([^&>]+)[^>]*>;\s*rel="next"/.exec(link)?.[1];
    return { items: (await response.json()) as T[], next: next ? decodeURIComponent(next) : null };
  },

  /** A write; `idempotencyKey` makes a repeat of the same submission replay instead of writing again. */
  async write<T>(method: 'POST' | 'PATCH' | 'DELETE', path: string, body: unknown, idempotencyKey?: string): Promise<T> {
    return (await send(method, path, { body, idempotencyKey })).json() as Promise<T>;
  },
};

import { useRef, useState } from 'preact/hooks';
import { api, ApiError, NetworkError } from './api.js';

/** A fresh Idempotency-Key. `crypto.randomUUID` needs a secure context; getRandomValues does not (plain http on a LAN). */
export function newIdempotencyKey(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return `dash_${Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('')}`;
}

export type SubmitError = ApiError | NetworkError;

/**
 * One form's writes (CONTRACT.md §14). A submission gets an Idempotency-Key when it is sent. A
 * second click while it is in flight sends nothing (the request under way carries the key); a retry
 * of the same request after a network error reuses the key, so the server replays instead of
 * writing twice. Once an answer came, success or error, the next submission gets a new key.
 */
export function useSubmission() {
  const pending = useRef<{ key: string; request: string } | null>(null);
  const inFlight = useRef(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<SubmitError | null>(null);

  async function submit<T>(method: 'POST' | 'PATCH' | 'DELETE', path: string, body?: unknown): Promise<T | undefined> {
    if (inFlight.current) return undefined;
    const request = `${method} ${path} ${JSON.stringify(body ?? null)}`;
    if (pending.current?.request !== request) pending.current = { key: newIdempotencyKey(), request };
    inFlight.current = true;
    setBusy(true);
    setError(null);
    try {
      const result = await api.write<T>(method, path, body, pending.current.key);
      pending.current = null;
      return result;
    } catch (e) {
      if (!(e instanceof NetworkError)) pending.current = null;
      setError(e instanceof ApiError || e instanceof NetworkError ? e : new NetworkError(String(e)));
      return undefined;
    } finally {
      inFlight.current = false;
      setBusy(false);
    }
  }

  return { submit, busy, error, clearError: () => setError(null) };
}

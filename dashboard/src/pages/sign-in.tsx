import { useState } from 'preact/hooks';
import { api, ApiError, NetworkError } from '../api.js';
import type { Me } from '../me.js';

/** Sign in with an API key: checked against `GET /me` before it is kept in sessionStorage. */
export function SignIn({ onSignedIn }: { onSignedIn: (key: string, me: Me) => void }) {
  const [key, setKey] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  async function submit(event: Event) {
    event.preventDefault();
    const trimmed = key.trim();
    if (!trimmed) return setError('Paste an API key (sk_live_… or pk_live_…).');
    setBusy(true);
    setError(null);
    try {
      onSignedIn(trimmed, await api.get<Me>('/me', trimmed));
    } catch (e) {
      if (e instanceof ApiError && e.status === 401) setError('That key was not accepted: it does not exist or was revoked. Check it and try again.');
      else setError(e instanceof ApiError || e instanceof NetworkError ? e.message : String(e));
    } finally {
      setBusy(false);
    }
  }

  return (
    <main class="signin">
      <form class="card signin-card" onSubmit={submit} aria-label="Sign in">
        <h1>Loyalty dashboard</h1>
        <p class="muted">
          Sign in with an API key of your business. A private key (<code>sk_live_…</code>) can change things; a public key (<code>pk_live_…</code>) only looks.
          The key stays in this browser tab and is forgotten when you sign out or close it.
        </p>
        <div class="field">
          <label for="api-key">API key</label>
          <input
            id="api-key"
            name="api-key"
            type="password"
            autoComplete="off"
            spellcheck={false}
            value={key}
            onInput={(e) => setKey((e.target as HTMLInputElement).value)}
            aria-invalid={error ? true : undefined}
            aria-describedby={error ? 'api-key-error' : undefined}
          />
          {error && (
            <p class="form-error" id="api-key-error" role="alert">
              {error}
            </p>
          )}
        </div>
        <button type="submit" class="primary" disabled={busy}>
          Sign in
        </button>
      </form>
    </main>
  );
}

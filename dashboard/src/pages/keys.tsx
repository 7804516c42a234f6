import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { PageHeader } from '../components/layout.js';
import { DataTable, Listing } from '../components/data-table.js';
import { Empty, Field, FormError, Time } from '../components/ui.js';
import { useLoad } from '../load.js';
import { useMe } from '../me.js';
import { useSubmission } from '../submission.js';
import type { ApiKey } from '../types.js';
import { SecretOnce } from './secret-once.js';

const PERMISSIONS = ['customers:read', 'customers:write', 'points:read', 'points:write', 'rewards:read', 'rewards:write', 'webhooks:write', 'keys:write'];

export function KeysPage() {
  const { can } = useMe();
  if (!can('keys:write')) {
    return (
      <>
        <PageHeader title="API keys" />
        <p class="note">Managing API keys needs a private key with the keys:write permission.</p>
      </>
    );
  }
  return <Keys />;
}

function Keys() {
  const { me } = useMe();
  const keys = useLoad(() => api.page<ApiKey>('/keys?limit=200'), []);
  const revoke = useSubmission();
  const [created, setCreated] = useState<(ApiKey & { key: string | null }) | null>(null);
  return (
    <>
      <PageHeader title="API keys" />
      {created?.key && <SecretOnce label={`New ${created.type} key${created.name ? ` “${created.name}”` : ''}`} value={created.key} onDismiss={() => setCreated(null)} />}
      <section class="card">
        <FormError error={revoke.error} />
        <Listing loaded={keys} empty={<Empty title="No keys." />}>
          {(items) => (
            <DataTable
              rows={items}
              rowKey={(k) => k.id}
              columns={[
                {
                  header: 'Key',
                  cell: (k) => (
                    <>
                      {k.name ?? <span class="muted">unnamed</span>}
                      <div class="muted small mono">
                        {k.key_hint} · {k.type}
                        {k.id === me.id ? ' · this key' : ''}
                      </div>
                    </>
                  ),
                },
                { header: 'Permissions', wide: true, cell: (k) => <span class="small">{k.permissions.join(', ')}</span> },
                { header: 'Created', cell: (k) => <Time iso={k.created_at} /> },
                {
                  header: 'Status',
                  cell: (k) =>
                    k.revoked_at ? (
                      <span class="pill pill-cancelled">
                        revoked <Time iso={k.revoked_at} />
                      </span>
                    ) : (
                      <button
                        type="button"
                        class="small-button danger"
                        disabled={revoke.busy}
                        aria-label={`Revoke ${k.name ?? k.key_hint}`}
                        onClick={async () => {
                          if (confirm(`Revoke ${k.name ?? k.key_hint}? Requests with it fail from now on.`) && (await revoke.submit('DELETE', `/keys/${k.id}`))) keys.reload();
                        }}
                      >
                        Revoke
                      </button>
                    ),
                },
              ]}
            />
          )}
        </Listing>
      </section>
      <CreateKey
        onCreated={(key) => {
          setCreated(key);
          keys.reload();
        }}
      />
    </>
  );
}

function CreateKey({ onCreated }: { onCreated: (key: ApiKey & { key: string | null }) => void }) {
  const { submit, busy, error } = useSubmission();
  const [type, setType] = useState<'private' | 'public'>('private');
  async function onSubmit(e: Event) {
    e.preventDefault();
    const form = e.currentTarget as HTMLFormElement;
    const data = new FormData(form);
    const name = String(data.get('name') ?? '').trim();
    const permissions = data.getAll('permissions').map(String);
    const body: Record<string, unknown> = { type };
    if (name) body.name = name;
    // All of them is the API's default; a subset restricts the key.
    if (type === 'private' && permissions.length > 0 && permissions.length < PERMISSIONS.length) body.permissions = permissions;
    const created = await submit<ApiKey & { key: string | null }>('POST', '/keys', body);
    if (created) {
      form.reset();
      onCreated(created);
    }
  }
  return (
    <section class="card">
      <h2 id="create-key-title">Create a key</h2>
      <form aria-labelledby="create-key-title" onSubmit={onSubmit} class="grid-form">
        <Field
          label="Type"
          name="type"
          error={error}
          control={(id) => (
            <select id={id} name="type" value={type} onChange={(e) => setType((e.target as HTMLSelectElement).value as 'private' | 'public')}>
              <option value="private">private (sk_live_…): server side, can write</option>
              <option value="public">public (pk_live_…): browsers, read-only</option>
            </select>
          )}
        />
        <Field label="Name" name="name" error={error} hint="What the key is for, e.g. “shop backend”." />
        {type === 'private' && (
          <fieldset class="permissions">
            <legend>Permissions</legend>
            {PERMISSIONS.map((p) => (
              <label key={p} class="check">
                <input type="checkbox" name="permissions" value={p} defaultChecked /> {p}
              </label>
            ))}
          </fieldset>
        )}
        <FormError error={error} />
        <div class="actions">
          <button type="submit" class="primary" disabled={busy}>
            Create key
          </button>
        </div>
      </form>
    </section>
  );
}

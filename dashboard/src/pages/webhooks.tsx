import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { PageHeader } from '../components/layout.js';
import { Pager, useCursor } from '../components/pager.js';
import { type Column, DataTable, Listing } from '../components/data-table.js';
import { Empty, Field, FormError, LoadError, Loading, Time } from '../components/ui.js';
import { formBody } from '../form-data.js';
import { useLoad } from '../load.js';
import { useMe } from '../me.js';
import { useSubmission } from '../submission.js';
import type { Delivery, Webhook } from '../types.js';
import { SecretOnce } from './secret-once.js';

export function WebhooksPage() {
  const { can } = useMe();
  if (!can('webhooks:write')) {
    return (
      <>
        <PageHeader title="Webhooks" />
        <p class="note">Webhooks need a private key with the webhooks:write permission.</p>
      </>
    );
  }
  return <Webhooks />;
}

function Webhooks() {
  const hooks = useLoad(() => api.page<Webhook>('/webhooks?limit=200'), []);
  const [secret, setSecret] = useState<{ label: string; value: string } | null>(null);
  return (
    <>
      <PageHeader title="Webhooks" />
      {secret && <SecretOnce label={secret.label} value={secret.value} onDismiss={() => setSecret(null)} />}
      {hooks.error ? (
        <LoadError error={hooks.error} />
      ) : !hooks.data ? (
        <Loading />
      ) : hooks.data.items.length === 0 ? (
        <section class="card">
          <Empty title="No webhook endpoints yet.">Add your server's URL below to be told when points move, tiers change or rewards are redeemed.</Empty>
        </section>
      ) : (
        hooks.data.items.map((h) => <Endpoint key={h.id} hook={h} onChanged={hooks.reload} onSecret={(value) => setSecret({ label: `New signing secret of ${h.url}`, value })} />)
      )}
      <CreateWebhook
        onCreated={(hook) => {
          hooks.reload();
          if (hook.secret) setSecret({ label: `Signing secret of ${hook.url}`, value: hook.secret });
        }}
      />
    </>
  );
}

function Endpoint({ hook, onChanged, onSecret }: { hook: Webhook; onChanged: () => void; onSecret: (secret: string) => void }) {
  const action = useSubmission();
  const [open, setOpen] = useState(false);
  const [sent, setSent] = useState(0);
  return (
    <section class="card" aria-label={`Webhook ${hook.url}`}>
      <div class="endpoint-head">
        <div>
          <h2 class="mono endpoint-url">{hook.url}</h2>
          <p class="muted small">
            {hook.events.join(', ')} · created <Time iso={hook.created_at} />
            {hook.description ? ` · ${hook.description}` : ''}
          </p>
        </div>
        <span class={`pill ${hook.active ? 'pill-completed' : 'pill-cancelled'}`}>{hook.active ? 'active' : (hook.disabled_reason ?? 'disabled')}</span>
      </div>
      <div class="button-row">
        <button
          type="button"
          disabled={action.busy}
          onClick={async () => {
            if (await action.submit('POST', `/webhooks/${hook.id}/test`, {})) {
              setSent((n) => n + 1);
              setOpen(true);
            }
          }}
        >
          Send test
        </button>
        <button
          type="button"
          disabled={action.busy}
          onClick={async () => {
            if (!confirm('Rotate the signing secret? Your receiver must switch to the new one.')) return;
            const rotated = await action.submit<{ secret: string | null }>('POST', `/webhooks/${hook.id}/rotate-secret`, {});
            if (rotated?.secret) onSecret(rotated.secret);
          }}
        >
          Rotate secret
        </button>
        <button
          type="button"
          disabled={action.busy}
          onClick={async () => {
            if (await action.submit('PATCH', `/webhooks/${hook.id}`, { active: !hook.active })) onChanged();
          }}
        >
          {hook.active ? 'Disable' : 'Enable'}
        </button>
        <button
          type="button"
          class="danger"
          disabled={action.busy}
          onClick={async () => {
            if (confirm(`Delete the endpoint ${hook.url}?`) && (await action.submit('DELETE', `/webhooks/${hook.id}`))) onChanged();
          }}
        >
          Delete
        </button>
        <button type="button" class="ghost" aria-expanded={open} onClick={() => setOpen(!open)}>
          {open ? 'Hide deliveries' : 'Show deliveries'}
        </button>
      </div>
      <FormError error={action.error} />
      {open && <Deliveries webhookId={hook.id} version={sent} />}
    </section>
  );
}

const DELIVERY_COLUMNS: Column<[string, Delivery[]]>[] = [
  {
    header: 'Message',
    cell: ([id, attempts]) => (
      <>
        {attempts[0]!.event_type}
        <div class="muted small mono">{id}</div>
      </>
    ),
  },
  { header: 'Status', cell: ([, attempts]) => <span class={`pill pill-${attempts.at(-1)!.message_status}`}>{attempts.at(-1)!.message_status}</span> },
  {
    header: 'Attempts',
    cell: ([, attempts]) => (
      <ol class="attempts">
        {attempts.map((a) => (
          <li key={a.id}>
            #{a.attempt} <Time iso={a.attempted_at} /> — {a.status_code ?? a.error ?? 'no answer'} ({a.duration_ms} ms)
          </li>
        ))}
      </ol>
    ),
  },
];

/** Attempts grouped by message: one row per message, its attempts listed under it. */
function Deliveries({ webhookId, version }: { webhookId: string; version: number }) {
  const cursor = useCursor();
  const deliveries = useLoad(() => api.page<Delivery>(`/webhooks/${webhookId}/deliveries?limit=30${cursor.query()}`), [webhookId, version, cursor.after]);
  const byMessage = (items: Delivery[]) => {
    const messages = new Map<string, Delivery[]>();
    for (const d of items) messages.set(d.message_id, [...(messages.get(d.message_id) ?? []), d]);
    return [...messages];
  };
  return (
    <Listing loaded={deliveries} empty={<Empty title="No deliveries yet.">Send a test, or wait for the next event.</Empty>}>
      {(items, next) => (
        <>
          <p class="muted small">Attempts oldest first, grouped by message (a message is retried on the schedule of the API docs until it is delivered or fails).</p>
          <DataTable rows={byMessage(items)} columns={DELIVERY_COLUMNS} rowKey={([id]) => id} />
          <Pager cursor={cursor} next={next} labels={['Earlier attempts', 'Later attempts']} />
        </>
      )}
    </Listing>
  );
}

function CreateWebhook({ onCreated }: { onCreated: (hook: Webhook & { secret: string | null }) => void }) {
  const { submit, busy, error } = useSubmission();
  async function onSubmit(e: Event) {
    e.preventDefault();
    const form = e.currentTarget as HTMLFormElement;
    const body = formBody(form);
    body.events = String(body.events ?? '*')
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
    const created = await submit<Webhook & { secret: string | null }>('POST', '/webhooks', body);
    if (created) {
      form.reset();
      onCreated(created);
    }
  }
  return (
    <section class="card">
      <h2 id="create-webhook-title">Add an endpoint</h2>
      <form aria-labelledby="create-webhook-title" onSubmit={onSubmit} class="grid-form">
        <Field label="URL" name="url" type="url" required placeholder="https://example.com/loyalty-webhooks" error={error} />
        <Field label="Events" name="events" value="*" error={error} hint="Comma-separated (points.earned, tier.upgraded, …) or * for all." />
        <Field label="Description" name="description" error={error} />
        <FormError error={error} />
        <div class="actions">
          <button type="submit" class="primary" disabled={busy}>
            Add endpoint
          </button>
        </div>
      </form>
    </section>
  );
}

import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { PageHeader } from '../components/layout.js';
import { Field, FormError, LoadError, Loading, Time } from '../components/ui.js';
import { useLoad } from '../load.js';
import { useMe } from '../me.js';
import { useSubmission } from '../submission.js';
import type { ProgramSettings } from '../types.js';

/** The business and the signed-in key (GET /me), and the points lifecycle policy (GET/PATCH /program, CONTRACT.md §13). */
export function SettingsPage() {
  const { me, can } = useMe();
  const program = useLoad(() => api.get<ProgramSettings>('/program'), []);
  return (
    <>
      <PageHeader title="Settings" />
      <section class="card">
        <h2>Business</h2>
        <dl class="profile">
          <dt>Name</dt>
          <dd>{me.business.name}</dd>
          <dt>Business id</dt>
          <dd class="mono">{me.business.id}</dd>
          <dt>Plan</dt>
          <dd>{me.business.plan === 'free' ? 'Free (up to 1,000 customers)' : 'Unlimited'}</dd>
          <dt>Since</dt>
          <dd>
            <Time iso={me.business.created_at} />
          </dd>
        </dl>
      </section>
      <section class="card">
        <h2>This key</h2>
        <dl class="profile">
          <dt>Key</dt>
          <dd class="mono">
            {me.key_hint} ({me.type}){me.name ? ` — ${me.name}` : ''}
          </dd>
          <dt>Permissions</dt>
          <dd>{me.permissions.join(', ')}</dd>
        </dl>
      </section>
      <section class="card" aria-labelledby="program-title">
        <h2 id="program-title">Points program</h2>
        {program.error ? (
          <LoadError error={program.error} />
        ) : !program.data ? (
          <Loading />
        ) : (
          <ProgramForm settings={program.data} readOnly={!can('rewards:write')} onSaved={program.reload} />
        )}
      </section>
    </>
  );
}

/** A whole number of days from a form field; empty: null (no expiry, no window). */
const days = (data: FormData, name: string): number | null => {
  const text = String(data.get(name) ?? '').trim();
  return text === '' ? null : Number(text);
};

/**
 * The lifecycle policy as a form (read-only without rewards:write). A change applies to credits made
 * after it, never to points already credited.
 */
function ProgramForm({ settings, readOnly, onSaved }: { settings: ProgramSettings; readOnly: boolean; onSaved: () => void }) {
  const { submit, busy, error } = useSubmission();
  const [mode, setMode] = useState(settings.tier_qualification.mode);
  const [saved, setSaved] = useState(false);
  async function onSubmit(e: Event) {
    e.preventDefault();
    const data = new FormData(e.currentTarget as HTMLFormElement);
    const body = {
      points_expiry_days: days(data, 'points_expiry_days'),
      pending_days: days(data, 'pending_days') ?? 0,
      expiring_notice_days: days(data, 'expiring_notice_days') ?? 7,
      tier_qualification: { mode, window_days: mode === 'rolling' ? days(data, 'tier_qualification.window_days') : null },
    };
    setSaved(false);
    if (await submit('PATCH', '/program', body)) {
      setSaved(true);
      onSaved();
    }
  }
  const value = (n: number | null) => (n === null ? '' : String(n));
  return (
    <form aria-label="Points program" onSubmit={onSubmit} class="grid-form">
      <fieldset class="plain" disabled={readOnly}>
        <Field label="Points expire after (days)" name="points_expiry_days" type="number" min={1} step={1} value={value(settings.points_expiry_days)} error={error} hint="Counted from when the points become spendable. Empty: points never expire." />
        <Field label="Pending days" name="pending_days" type="number" min={0} step={1} value={String(settings.pending_days)} error={error} hint="Days new points wait before they can be spent (0: at once)." />
        <Field label="Expiry notice (days before)" name="expiring_notice_days" type="number" min={1} step={1} value={String(settings.expiring_notice_days)} error={error} hint="When the points.expiring webhook is sent." />
        <Field
          label="Tier qualification"
          name="tier_qualification.mode"
          error={error}
          control={(id) => (
            <select id={id} name="mode" value={mode} onChange={(e) => setMode((e.currentTarget as HTMLSelectElement).value as typeof mode)}>
              <option value="lifetime">Lifetime (kept for good)</option>
              <option value="rolling">Rolling window</option>
            </select>
          )}
        />
        {mode === 'rolling' && (
          <Field label="Window (days)" name="tier_qualification.window_days" type="number" min={1} step={1} required value={value(settings.tier_qualification.window_days)} error={error} hint="A customer keeps a tier while the points credited in this window reach its threshold." />
        )}
      </fieldset>
      <FormError error={error} />
      {saved && (
        <p class="success" role="status">
          Saved. The policy applies to points credited from now on.
        </p>
      )}
      {readOnly ? (
        <p class="muted">Changing the policy needs a key with rewards:write.</p>
      ) : (
        <div class="actions">
          <button type="submit" class="primary" disabled={busy} aria-busy={busy}>
            Save policy
          </button>
        </div>
      )}
      {settings.updated_at && (
        <p class="muted small">
          Last changed <Time iso={settings.updated_at} />
        </p>
      )}
    </form>
  );
}
